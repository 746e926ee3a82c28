"""Runtime vector tables ``rag_<collection>`` (R-VEC-1) and the batched chunk write (R-VEC-3)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from pgvector import Vector
from psycopg import sql
from psycopg.types.json import Jsonb

from sluice.db.connection import Connection
from sluice.db.migrations import version_tuple
from sluice.vectors.fulltext import DEFAULT_LANGUAGE, tsvector_column
from sluice.vectors.names import index_ident, is_runtime_table, table_ident, table_name


@dataclass
class ChunkRow:
    """One chunk as stored: content, its vector and the metadata of R-CHUNK-3."""

    document_id: uuid.UUID
    kb_id: uuid.UUID
    org_id: str | None
    chunk_index: int
    content: str
    embedding: Sequence[float]
    page_start: int | None = None
    page_end: int | None = None
    source: str | None = None
    document_type: str | None = None
    organizational_unit: str | None = None
    document_date: date | None = None
    source_path: str | None = None
    filename: str | None = None
    content_hash: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


_COLUMNS = (
    "document_id", "kb_id", "org_id", "chunk_index", "content", "embedding", "page_start", "page_end",
    "source", "document_type", "organizational_unit", "document_date", "source_path", "filename",
    "content_hash", "metadata",
)
_COPY_TYPES = (
    "uuid", "uuid", "text", "int4", "text", "vector", "int4", "int4",
    "text", "text", "text", "date", "text", "text", "text", "jsonb",
)


# What the HNSW index over ``embedding`` stores: the vectors as they are, or as half-precision
# floats (pgvector >= 0.7), an expression index that the search's ORDER BY must repeat. The table
# keeps full-precision vectors either way, and search orders its candidates by them.
# halfvec is the default where the server has it: at 1M 384-d rows (bench/README.md, two builds
# of each over the same rows) the index is 1,116 MiB against 1,953 (0.57x), builds in about the
# same time, and recall@10 averaged over the builds is within 0.005 of vector's at every
# selectivity measured (the spread between two builds of one kind is larger, ~0.02). It also
# indexes up to 4,000 dimensions where vector stops at 2,000.
IndexKind = Literal["vector", "halfvec"]
HALFVEC_VERSION = (0, 7)


def vector_version(conn: Connection) -> tuple[int, ...]:
    """The pgvector version this database runs (its extversion, not the server's newest)."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return version_tuple(_first(row) if row is not None else None)


def _first(row: dict[str, Any]) -> Any:
    return next(iter(row.values()))


def index_kind_for(version: tuple[int, ...]) -> IndexKind:
    """The HNSW index a new table gets on a server running pgvector ``version``."""
    return "halfvec" if version >= HALFVEC_VERSION else "vector"


def embedding_index(collection: str, dim: int, kind: IndexKind) -> sql.Composed:
    """``CREATE INDEX`` for the collection's HNSW cosine index of ``kind`` (also the benchmarks' and tests')."""
    how = (sql.SQL("((embedding::halfvec({d})) halfvec_cosine_ops)").format(d=sql.Literal(int(dim)))
           if kind == "halfvec" else sql.SQL("(embedding vector_cosine_ops)"))
    return sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} USING hnsw ").format(
        i=index_ident(collection, "embedding_idx"), t=table_ident(collection)) + how


def table_exists(conn: Connection, collection: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) AS reg", (table_name(collection),)).fetchone()
    return row is not None and row["reg"] is not None


def ensure_table(conn: Connection, collection: str, dim: int, index: IndexKind | None = None,
                 language: str = DEFAULT_LANGUAGE) -> None:
    """Create the collection's table and indexes if absent, inside the caller's transaction.

    ``index`` is the HNSW index's kind; by default what the server's pgvector supports best
    (``index_kind_for``). ``language`` is the text search configuration of its full-text column
    (R-SRCH-7). A table keeps the index and language it was created with: search reads both.
    """
    # Two workers creating one table at once would collide on pg_type; serialise them.
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (table_name(collection),))
    if table_exists(conn, collection):
        return
    t = table_ident(collection)
    conn.execute(
        sql.SQL(
            """
            CREATE TABLE IF NOT EXISTS {t} (
                id                  bigserial PRIMARY KEY,
                document_id         uuid    NOT NULL,
                kb_id               uuid,
                org_id              text,
                chunk_index         integer NOT NULL,
                content             text    NOT NULL,
                embedding           vector({dim}) NOT NULL,
                page_start          integer,
                page_end            integer,
                source              text,
                document_type       text,
                organizational_unit text,
                document_date       date,
                source_path         text,
                filename            text,
                content_hash        text,
                metadata            jsonb   NOT NULL DEFAULT '{{}}'::jsonb,
                {tsv}
            )
            """
        ).format(t=t, dim=sql.Literal(int(dim)), tsv=tsvector_column(language))
    )
    conn.execute(embedding_index(collection, dim, index or index_kind_for(vector_version(conn))))
    statements = [
        ("tsv_idx", "USING gin (content_tsv)"),
        ("spath_idx", "USING hash (source_path)"),
        ("fname_idx", "USING hash (filename)"),
        ("chash_idx", "USING hash (content_hash)"),
        ("kb_idx", "(kb_id)"),
        ("doc_idx", "(document_id, chunk_index)"),
        # Search filters (R-SRCH-2): a selective filter is answered by an exact scan of the
        # rows it keeps, found through these (bitmap-ANDed with kb_idx), not by reading the table.
        ("source_idx", "(source)"),
        ("dtype_idx", "(document_type)"),
        ("ou_idx", "(organizational_unit)"),
        ("ddate_idx", "(document_date)"),
    ]
    for suffix, how in statements:
        conn.execute(
            sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} " + how).format(i=index_ident(collection, suffix), t=t)
        )
    # BM25's statistics (R-SRCH-1), kept by the table's own triggers in every writing transaction.
    conn.execute("SELECT sluice_text_stats_attach(%s::regclass)", (table_name(collection),))


def as_vector(values: Sequence[float]) -> Vector:
    """pgvector's float32 vector of ``values``, without numpy: only the functions that run the local
    model carry numpy (their Lambda layer); every other one writes and searches vectors without it."""
    return Vector(values if isinstance(values, list) else list(values))


def insert_chunks(conn: Connection, collection: str, rows: Sequence[ChunkRow]) -> int:
    """Write all rows with one binary COPY: no round trip per chunk (R-VEC-3)."""
    if not rows:
        return 0
    stmt = sql.SQL("COPY {t} ({cols}) FROM STDIN WITH (FORMAT BINARY)").format(
        t=table_ident(collection), cols=sql.SQL(", ").join(map(sql.Identifier, _COLUMNS))
    )
    with conn.cursor() as cur, cur.copy(stmt) as copy:
        copy.set_types(list(_COPY_TYPES))
        for r in rows:
            copy.write_row(
                (
                    r.document_id, r.kb_id, r.org_id, r.chunk_index, r.content,
                    as_vector(r.embedding),
                    r.page_start, r.page_end, r.source, r.document_type, r.organizational_unit,
                    r.document_date, r.source_path, r.filename, r.content_hash, Jsonb(r.metadata),
                )
            )
    return len(rows)


_BATCH_ROWS = 200


def insert_chunks_batched(conn: Connection, collection: str, rows: Sequence[ChunkRow]) -> int:
    """The alternative R-VEC-3 allows: ``executemany`` of at most 200 rows a statement.

    Kept for ``bench/ingest.py``, which measures it against the COPY above; the
    pipeline writes with COPY because it measured faster.
    """
    if not rows:
        return 0
    stmt = sql.SQL("INSERT INTO {t} ({cols}) VALUES ({params})").format(
        t=table_ident(collection),
        cols=sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)),
        params=sql.SQL(", ").join(sql.Placeholder() * len(_COLUMNS)),
    )
    with conn.cursor() as cur:
        for i in range(0, len(rows), _BATCH_ROWS):
            cur.executemany(stmt, [
                (
                    r.document_id, r.kb_id, r.org_id, r.chunk_index, r.content,
                    as_vector(r.embedding),
                    r.page_start, r.page_end, r.source, r.document_type, r.organizational_unit,
                    r.document_date, r.source_path, r.filename, r.content_hash, Jsonb(r.metadata),
                )
                for r in rows[i:i + _BATCH_ROWS]
            ])
    return len(rows)


def replace_document_chunks(conn: Connection, collection: str, document_id: uuid.UUID,
                            rows: Sequence[ChunkRow]) -> int:
    """Write a document's new chunks, then delete the ones it had (R-VEC-3: insert before delete).

    The caller holds the document row's lock, so every older chunk of this
    document was committed before this transaction drew its ids: the new rows'
    ids are all above ``high``, and the delete takes exactly the old ones.
    """
    t = table_ident(collection)
    # ``id + 0``, not ``id``: a bare max(id) lets the planner walk the primary key backwards until it
    # meets this document, which for a new document is the whole table; this reads the document index.
    row = conn.execute(
        sql.SQL("SELECT max(id + 0) AS high FROM {t} WHERE document_id = %s").format(t=t), (document_id,)
    ).fetchone()
    high = row["high"] if row else None
    insert_chunks(conn, collection, rows)
    if high is not None:
        conn.execute(sql.SQL("DELETE FROM {t} WHERE document_id = %s AND id <= %s").format(t=t),
                     (document_id, high))
    return len(rows)


def readdress_document_chunks(conn: Connection, collection: str, document_id: uuid.UUID, *, source_path: str,
                              filename: str) -> int:
    """A renamed document's chunks carry its new address and name; their content and vectors stay."""
    if not table_exists(conn, collection):
        return 0
    cur = conn.execute(
        sql.SQL("UPDATE {t} SET source_path = %s, filename = %s WHERE document_id = %s").format(
            t=table_ident(collection)), (source_path, filename, document_id))
    return cur.rowcount


def delete_document_chunks(conn: Connection, collection: str, document_id: uuid.UUID) -> int:
    if not table_exists(conn, collection):
        return 0
    cur = conn.execute(
        sql.SQL("DELETE FROM {t} WHERE document_id = %s").format(t=table_ident(collection)), (document_id,)
    )
    return cur.rowcount


def holds_chunks_outside(conn: Connection, collection: str, org_id: str | None) -> bool:
    """Whether the collection's table holds a chunk of a tenant other than ``org_id`` (any, for None)."""
    if not table_exists(conn, collection):
        return False
    chunk = conn.execute(
        sql.SQL("SELECT 1 FROM {t} WHERE %(org)s::text IS NULL OR org_id IS DISTINCT FROM %(org)s::text LIMIT 1")
        .format(t=table_ident(collection)),
        {"org": org_id},
    ).fetchone()
    return chunk is not None


def count_chunks(conn: Connection, collection: str, document_id: uuid.UUID | None = None) -> int:
    if not table_exists(conn, collection):
        return 0
    query = sql.SQL("SELECT count(*) AS n FROM {t}").format(t=table_ident(collection))
    params: tuple[uuid.UUID, ...] = ()
    if document_id is not None:
        query = query + sql.SQL(" WHERE document_id = %s")
        params = (document_id,)
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(row["n"])


def drop_table(conn: Connection, collection: str) -> None:
    """Drop the table and the text statistics its triggers kept (keyed by the table's oid)."""
    conn.execute("DELETE FROM collection_lexemes WHERE relid = to_regclass(%s)", (table_name(collection),))
    conn.execute("DELETE FROM collection_text_stats WHERE relid = to_regclass(%s)", (table_name(collection),))
    conn.execute(sql.SQL("DROP TABLE IF EXISTS {t}").format(t=table_ident(collection)))


# --- teardowns (R-TD-1): a base's chunks, a table's unfiled content, the runtime tables ----------

def _of_bases(kb_ids: Sequence[uuid.UUID], document_ids: Sequence[uuid.UUID]) -> tuple[sql.Composable, dict[str, Any]]:
    return (sql.SQL("(kb_id = ANY(%(kbs)s) OR document_id = ANY(%(docs)s))"),
            {"kbs": list(kb_ids), "docs": list(document_ids)})


def count_chunks_of(conn: Connection, collection: str, kb_ids: Sequence[uuid.UUID],
                    document_ids: Sequence[uuid.UUID] = ()) -> int:
    """The chunks filed under ``kb_ids``, or of ``document_ids``, in the collection's table."""
    if not table_exists(conn, collection):
        return 0
    where, params = _of_bases(kb_ids, document_ids)
    row = conn.execute(sql.SQL("SELECT count(*) AS n FROM {t} WHERE ").format(t=table_ident(collection)) + where,
                       params).fetchone()
    assert row is not None
    return int(row["n"])


def delete_chunks_of(conn: Connection, collection: str, kb_ids: Sequence[uuid.UUID],
                     document_ids: Sequence[uuid.UUID], *, limit: int) -> int:
    """Delete at most ``limit`` of the chunks ``count_chunks_of`` counts; returns how many went.

    A batch at a time, so that a base of millions of chunks is removed in bounded
    transactions while the table stays in use by the bases that share it.
    """
    if not table_exists(conn, collection):
        return 0
    where, params = _of_bases(kb_ids, document_ids)
    t = table_ident(collection)
    query = (sql.SQL("DELETE FROM {t} WHERE id IN (SELECT id FROM {t} WHERE ").format(t=t) + where
             + sql.SQL(" LIMIT %(limit)s)"))
    return conn.execute(query, {**params, "limit": limit}).rowcount


def holds_unfiled_chunks_outside(conn: Connection, collection: str, *, document_ids: Sequence[uuid.UUID],
                                 orgs: Sequence[str], untenanted: bool) -> bool:
    """Whether the table holds a chunk no base files that a teardown does not take.

    A teardown takes the chunks of the rows it deleted (``document_ids``) and the
    unfiled chunks of the tenants it takes (``orgs``; no organization with ``untenanted``).
    """
    if not table_exists(conn, collection):
        return False
    query = sql.SQL(
        """
        SELECT 1 FROM {t}
         WHERE kb_id IS NULL AND NOT document_id = ANY(%(docs)s)
           AND NOT coalesce(org_id = ANY(%(orgs)s), false)
           AND NOT (%(untenanted)s AND org_id IS NULL)
         LIMIT 1
        """
    ).format(t=table_ident(collection))
    row = conn.execute(query, {"docs": list(document_ids), "orgs": list(orgs), "untenanted": untenanted}).fetchone()
    return row is not None


def runtime_tables(conn: Connection) -> list[str]:
    """The collections whose runtime table exists, by name (``names.is_runtime_table``)."""
    rows = conn.execute(
        "SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema() AND starts_with(c.relname, 'rag_')"
        " ORDER BY c.relname"
    ).fetchall()
    return [r["name"].removeprefix("rag_") for r in rows if is_runtime_table(r["name"])]
