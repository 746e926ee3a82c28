"""The chunks of conversation attachments (``chat_attachment_chunks``, migration 0008) and the
scoped excerpt search over them (R-CHAT-2, R-CHAT-3).

A table of its own rather than a ``rag_<collection>`` table: no collection name leads
to it, so no listing, claim, teardown or ``/rag/search`` can reach an attachment's
chunks, and its rows are scoped by conversation and attachment, not by base and
tenant. A chunk cannot outlive its attachment (a foreign key with ON DELETE CASCADE).

The search is the same hybrid as the collections' (R-SRCH-1, revised): the vector
top ``pool`` by cosine and the lexical top ``pool`` by BM25 (the statistics those of
the attachments in scope, counted as the query runs), both inside the scope,
each candidate with both scores; ``sluice.search.ranking`` orders and deduplicates
them. The scope is a handful of attachments of one conversation, so every row in
it is scored exactly; there is no graph to walk.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from psycopg import sql
from psycopg.rows import dict_row

from sluice.db.connection import Connection
from sluice.vectors.bounds import bounded
from sluice.vectors.fulltext import NO_TEXT, TextQuery, TextStatistics, query_lexemes, weigh
from sluice.vectors.search import Candidate
from sluice.vectors.store import as_vector

TABLE = "chat_attachment_chunks"
# What a Candidate from this table says it comes from (it has no collection).
SOURCE = "chat_attachment"
DIM = 384


@dataclass
class AttachmentChunk:
    attachment_id: uuid.UUID
    conversation_id: uuid.UUID
    chunk_index: int
    content: str
    embedding: Sequence[float]
    page_start: int | None = None
    page_end: int | None = None


_COLUMNS = ("attachment_id", "conversation_id", "chunk_index", "content", "embedding", "page_start", "page_end")
_TYPES = ("uuid", "uuid", "int4", "text", "vector", "int4", "int4")


def insert_chunks(conn: Connection, rows: Sequence[AttachmentChunk]) -> int:
    """One binary COPY for the batch (R-VEC-3)."""
    if not rows:
        return 0
    with conn.cursor() as cur, cur.copy(
            f"COPY {TABLE} ({', '.join(_COLUMNS)}) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(list(_TYPES))
        for r in rows:
            copy.write_row((r.attachment_id, r.conversation_id, r.chunk_index, r.content,
                            as_vector(r.embedding), r.page_start, r.page_end))
    return len(rows)


def delete_chunks(conn: Connection, attachment_id: uuid.UUID) -> int:
    return conn.execute(f"DELETE FROM {TABLE} WHERE attachment_id = %s", (attachment_id,)).rowcount


def count_chunks(conn: Connection, *, attachment_id: uuid.UUID | None = None,
                 conversation_id: uuid.UUID | None = None) -> int:
    where, params = _where(attachment_id, conversation_id)
    row = conn.execute(f"SELECT count(*) AS n FROM {TABLE} WHERE {where}", params).fetchone()
    return int(row["n"]) if row else 0


def _where(attachment_id: uuid.UUID | None, conversation_id: uuid.UUID | None) -> tuple[str, tuple[uuid.UUID, ...]]:
    if attachment_id is not None:
        return "attachment_id = %s", (attachment_id,)
    if conversation_id is not None:
        return "conversation_id = %s", (conversation_id,)
    return "true", ()


def chunk_texts(conn: Connection, attachment_id: uuid.UUID) -> list[str]:
    """An attachment's chunks in document order (what its overview is written from)."""
    rows = conn.execute(f"SELECT content FROM {TABLE} WHERE attachment_id = %s ORDER BY chunk_index",
                        (attachment_id,)).fetchall()
    return [r["content"] for r in rows]


# Chat attachments are indexed in 'simple' (migration 0008's generated column).
LANGUAGE = "simple"

# BM25's statistics of the scope itself (a handful of attachments: counted exactly, every time).
_STATISTICS = f"""
SELECT count(*) AS chunks, coalesce(sum(length(content_tsv)), 0) AS lexemes,
       (SELECT coalesce(json_object_agg(lexeme, n), '{{}}'::json) FROM (
            SELECT u.lexeme, count(*) AS n FROM {TABLE} s, unnest(tsvector_to_array(s.content_tsv)) AS u(lexeme)
             WHERE s.conversation_id = %(conversation)s AND s.attachment_id = ANY(%(attachments)s)
               AND u.lexeme = ANY(%(lx)s::text[])
             GROUP BY u.lexeme) AS held) AS holding
  FROM {TABLE}
 WHERE conversation_id = %(conversation)s AND attachment_id = ANY(%(attachments)s)
"""

_CANDIDATES = """
WITH scope AS (
    SELECT id, embedding, content_tsv FROM {table}
     WHERE conversation_id = %(conversation)s AND attachment_id = ANY(%(attachments)s)
), by_vector AS (
    SELECT id FROM scope ORDER BY embedding <=> %(vec)s, id LIMIT %(pool)s
), by_text AS (
    SELECT s.id FROM scope s
     WHERE %(tsq)s::tsquery IS NOT NULL AND s.content_tsv @@ %(tsq)s::tsquery
     ORDER BY {scope_score} DESC, s.id LIMIT %(pool)s
), pool AS (
    SELECT id FROM by_vector UNION SELECT id FROM by_text
)
SELECT c.id, c.attachment_id, c.chunk_index, c.content, c.page_start, c.page_end,
       1 - (c.embedding <=> %(vec)s) AS vec_score, {score} AS text_score,
       c.id IN (SELECT id FROM by_text) AS by_text, c.id IN (SELECT id FROM by_vector) AS by_vector
  FROM pool JOIN {table} AS c USING (id)
 ORDER BY c.id
"""


def lexical_query(conn: Connection, *, conversation_id: uuid.UUID, attachment_ids: Sequence[uuid.UUID],
                  text: str) -> TextQuery:
    """The search text as BM25 scores it against the attachments named (the same lexical side as a
    collection's, R-SRCH-1, on the statistics of the scope)."""
    lexemes = query_lexemes(conn, LANGUAGE, text)
    if not lexemes:
        return NO_TEXT
    row = conn.execute(_STATISTICS, {"conversation": conversation_id, "attachments": list(attachment_ids),
                                     "lx": list(lexemes)}).fetchone()
    chunks = int(row["chunks"]) if row else 0
    if row is None or chunks == 0:
        return weigh(lexemes, None)
    stats = TextStatistics(chunks, int(row["lexemes"]) / chunks, {k: int(v) for k, v in row["holding"].items()})
    return weigh(lexemes, stats)


def candidates(conn: Connection, *, conversation_id: uuid.UUID, attachment_ids: Sequence[uuid.UUID],
               vector: Sequence[float], text: str, pool: int) -> list[Candidate]:
    """The candidate pool of the attachments named (of this conversation only), each with both scores.

    ``document_id`` of a candidate is its attachment's id; the caller names the file.
    """
    if not attachment_ids:
        return []
    with bounded(conn):
        lexical = lexical_query(conn, conversation_id=conversation_id, attachment_ids=attachment_ids, text=text)
        query = sql.SQL(_CANDIDATES).format(table=sql.Identifier(TABLE),
                                            scope_score=lexical.score(sql.SQL("s.content_tsv")),
                                            score=lexical.score(sql.SQL("c.content_tsv")))
        rows = conn.cursor(row_factory=dict_row).execute(query, {
            "tsq": lexical.tsquery, "conversation": conversation_id, "attachments": list(attachment_ids),
            "vec": as_vector(vector), "pool": pool,
        }).fetchall()
    return [
        Candidate(collection=TABLE, chunk_id=r["id"], document_id=r["attachment_id"], kb_id=None,
                  chunk_index=r["chunk_index"], content=r["content"], filename=None, page_start=r["page_start"],
                  page_end=r["page_end"], source=SOURCE, document_type=None, organizational_unit=None,
                  source_path=None, metadata={}, vec_score=float(r["vec_score"]),
                  text_score=float(r["text_score"]), text_bound=lexical.bound,
                  found_by=tuple(side for side, hit in (("vector", r["by_vector"]), ("text", r["by_text"])) if hit))
        for r in rows
    ]
