"""The chunks of conversation attachments (``chat_attachment_chunks``, migration 0008) and the
scoped excerpt search over them (R-CHAT-2, R-CHAT-3).

A table of its own rather than a ``rag_<collection>`` table: no collection name leads
to it, so no listing, claim, teardown or ``/rag/search`` can reach an attachment's
chunks, and its rows are scoped by conversation and attachment, not by base and
tenant. A chunk cannot outlive its attachment (a foreign key with ON DELETE CASCADE).

The search is the same hybrid as the collections' (R-SRCH-1, revised): the vector
top ``pool`` by cosine and the full-text top ``pool`` by rank, both inside the scope,
each candidate with both scores; ``sluice.search.ranking`` orders and deduplicates
them. The scope is a handful of attachments of one conversation, so every row in
it is scored exactly; there is no graph to walk.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pgvector import Vector
from psycopg.rows import dict_row

from sluice.db.connection import Connection
from sluice.vectors.search import Candidate

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
                            np.asarray(r.embedding, dtype=np.float32), r.page_start, r.page_end))
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


_CANDIDATES = f"""
WITH q AS (
    SELECT replace(plainto_tsquery('simple', %(text)s)::text, '&', '|') AS terms
), scope AS (
    SELECT id, embedding, content_tsv FROM {TABLE}
     WHERE conversation_id = %(conversation)s AND attachment_id = ANY(%(attachments)s)
), by_vector AS (
    SELECT id FROM scope ORDER BY embedding <=> %(vec)s, id LIMIT %(pool)s
), by_text AS (
    SELECT s.id FROM scope s CROSS JOIN q
     WHERE q.terms <> '' AND s.content_tsv @@ q.terms::tsquery
     ORDER BY ts_rank(s.content_tsv, q.terms::tsquery) DESC, s.id LIMIT %(pool)s
), pool AS (
    SELECT id FROM by_vector UNION SELECT id FROM by_text
)
SELECT c.id, c.attachment_id, c.chunk_index, c.content, c.page_start, c.page_end,
       1 - (c.embedding <=> %(vec)s) AS vec_score,
       CASE WHEN q.terms = '' THEN 0.0 ELSE ts_rank(c.content_tsv, q.terms::tsquery) END AS text_score
  FROM pool JOIN {TABLE} AS c USING (id) CROSS JOIN q
 ORDER BY c.id
"""


def candidates(conn: Connection, *, conversation_id: uuid.UUID, attachment_ids: Sequence[uuid.UUID],
               vector: Sequence[float], text: str, pool: int) -> list[Candidate]:
    """The candidate pool of the attachments named (of this conversation only), each with both scores.

    ``document_id`` of a candidate is its attachment's id; the caller names the file.
    """
    if not attachment_ids:
        return []
    rows = conn.cursor(row_factory=dict_row).execute(_CANDIDATES, {
        "text": text, "conversation": conversation_id, "attachments": list(attachment_ids),
        "vec": Vector(np.asarray(vector, dtype=np.float32)), "pool": pool,
    }).fetchall()
    return [
        Candidate(collection=TABLE, chunk_id=r["id"], document_id=r["attachment_id"], kb_id=None,
                  chunk_index=r["chunk_index"], content=r["content"], filename=None, page_start=r["page_start"],
                  page_end=r["page_end"], source=SOURCE, document_type=None, organizational_unit=None,
                  source_path=None, metadata={}, vec_score=float(r["vec_score"]),
                  text_score=float(r["text_score"]))
        for r in rows
    ]
