"""The documents tracking table (R-DOC-1): one row per document, written before its object."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Any

from psycopg.types.json import Jsonb

from sluice.db.connection import Connection


class DocumentStatus(StrEnum):
    """A document's state; only the transitions below change it (``update`` refuses ``status``)."""

    PROCESSING = "processing"  # an attempt is running: a stage will claim the row
    DONE = "done"  # indexed: its chunks are searchable
    ERROR = "error"  # failed, with the sentence in ``error_message``; a retry opens a new attempt


@dataclass
class Document:
    id: uuid.UUID
    kb_id: uuid.UUID | None
    org_id: str | None
    collection_name: str
    filename: str
    filesize: int | None
    filetype: str | None
    status: DocumentStatus
    stage: str
    error_message: str | None
    vector_document_id: uuid.UUID | None
    chunk_count: int
    storage_path: str | None
    source: str
    source_path: str | None
    content_hash: str | None
    organizational_unit: str | None
    document_type: str | None
    document_date: date | None
    uploaded_by: str | None
    attempt: int
    ingestion_override: dict[str, Any] | None
    replaces_document_id: uuid.UUID | None
    created_at: datetime | None
    updated_at: datetime | None
    completed_at: datetime | None
    source_etag: str | None = None
    source_sequencer: str | None = None
    last_failure: str | None = None
    # The current stage's progress, where it has steps (embedding: provider batches done / all).
    progress_done: int | None = None
    progress_total: int | None = None
    # The attempt the reaper re-drove once already (sluice.ingest.recovery), if any.
    redriven_attempt: int | None = None
    # Image description (R-PARSE-6): images described, images not, and why (None where it was off).
    images_described: int | None = None
    images_undescribed: int | None = None
    image_note: str | None = None
    # What the parse stage said besides the text (R-UP-6's "read as", R-PARSE-1's limits); None: nothing.
    parse_notes: list[str] | None = None
    # R-PARSE-7: the parser that read the document, and the pages OCR recognised (None: OCR off).
    parser: str | None = None
    ocr_pages: int | None = None
    # An archive: how many of its members count against its owners' upload limits already (issue 37).
    members_admitted: int = 0

    def __post_init__(self) -> None:
        self.status = DocumentStatus(self.status)

    def is_current(self, attempt: int | None) -> bool:
        """Whether a stage event for ``attempt`` (any attempt, with None) may still act on this row."""
        return self.status == DocumentStatus.PROCESSING and (attempt is None or self.attempt == attempt)


_FIELDS = ", ".join(Document.__dataclass_fields__)

# The pool hands out dict-row connections; rows are read by column name.


def _insert(conn: Connection, values: dict[str, Any], conflict: str) -> Document | None:
    values.setdefault("id", uuid.uuid4())
    if values.get("ingestion_override") is not None:
        values["ingestion_override"] = Jsonb(values["ingestion_override"])
    cols = ", ".join(values)
    params = ", ".join(f"%({k})s" for k in values)
    row = conn.execute(
        f"INSERT INTO documents ({cols}) VALUES ({params}){conflict} RETURNING {_FIELDS}", values
    ).fetchone()
    return Document(**row) if row else None


def insert(conn: Connection, **values: Any) -> Document:
    doc = _insert(conn, values, "")
    assert doc is not None
    return doc


def insert_if_absent(conn: Connection, **values: Any) -> Document | None:
    """Insert a row with a chosen id; a row with that id already there is left alone (None)."""
    return _insert(conn, values, " ON CONFLICT (id) DO NOTHING")


def get(conn: Connection, doc_id: uuid.UUID, *, for_update: bool = False) -> Document | None:
    suffix = " FOR UPDATE" if for_update else ""
    row = conn.execute(f"SELECT {_FIELDS} FROM documents WHERE id = %s{suffix}", (doc_id,)).fetchone()
    return Document(**row) if row else None


def count_existing(conn: Connection, ids: list[uuid.UUID]) -> int:
    """How many of ``ids`` have a row."""
    if not ids:
        return 0
    row = conn.execute("SELECT count(*) AS n FROM documents WHERE id = ANY(%s)", (ids,)).fetchone()
    assert row is not None
    return int(row["n"])


def by_storage_path(conn: Connection, key: str) -> Document | None:
    row = conn.execute(
        f"SELECT {_FIELDS} FROM documents WHERE storage_path = %s ORDER BY created_at DESC LIMIT 1", (key,)
    ).fetchone()
    return Document(**row) if row else None


def lock_address(conn: Connection, kb_id: uuid.UUID, source_path: str) -> None:
    """Serialise, until the transaction ends, every decision about one address in one base."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"doc-address:{kb_id}:{source_path}",))


def by_address(conn: Connection, kb_id: uuid.UUID, source_path: str) -> list[Document]:
    """The rows tracking one address in one base, newest first."""
    rows = conn.execute(
        f"SELECT {_FIELDS} FROM documents WHERE kb_id = %s AND source_path = %s ORDER BY created_at DESC, id",
        (kb_id, source_path),
    ).fetchall()
    return [Document(**r) for r in rows]


def readdress(conn: Connection, doc_id: uuid.UUID, *, source_path: str, filename: str,
              source_etag: str | None) -> bool:
    """A finished document found under a new address (a renamed file): its address, name and signal move,
    its content, object and chunks stay."""
    return _set(conn, doc_id, {"source_path": source_path, "filename": filename, "source_etag": source_etag})


def archive_members(conn: Connection, kb_id: uuid.UUID, archive_path: str, *,
                    created_before: datetime | None = None) -> list[Document]:
    """The rows unpacked from the archive at ``archive_path`` in one base (R-ARC-2), locked.

    A member's ``source_path`` is ``<archive path>!/<member path>``; with
    ``created_before``, only members an older copy of the archive unpacked.
    """
    prefix = f"{archive_path}!/"
    rows = conn.execute(
        f"""
        SELECT {_FIELDS} FROM documents
         WHERE kb_id = %(kb)s AND left(source_path, %(n)s) = %(prefix)s
           AND (%(before)s::timestamptz IS NULL OR created_at < %(before)s)
         ORDER BY source_path
         FOR UPDATE
        """,
        {"kb": kb_id, "n": len(prefix), "prefix": prefix, "before": created_before},
    ).fetchall()
    return [Document(**r) for r in rows]


def replaced_by(conn: Connection, doc: Document) -> list[Document]:
    """The finished rows a completing document retires (R-DOC-6).

    The row it names in ``replaces_document_id``, and the older rows at its
    address in its own base — never by filename, never across bases, and never
    a row still ``processing``, which belongs to an attempt still running.
    """
    if doc.kb_id is None:
        return []
    rows = conn.execute(
        f"""
        SELECT {_FIELDS} FROM documents
         WHERE id <> %(id)s AND status IN ('done', 'error')
           AND (id = %(replaces)s
                OR (%(path)s::text IS NOT NULL AND kb_id = %(kb)s AND source_path = %(path)s
                    AND created_at <= %(created)s))
         FOR UPDATE
        """,
        {"id": doc.id, "replaces": doc.replaces_document_id, "path": doc.source_path, "kb": doc.kb_id,
         "created": doc.created_at},
    ).fetchall()
    return [Document(**r) for r in rows]


# What ``update`` may set: progress and facts a stage learns. The status, and the fields that go
# with it (``completed_at``, ``last_failure``, ``attempt``), change only through the transitions below.
_UPDATABLE = {
    "stage", "error_message", "vector_document_id", "chunk_count", "filetype", "filesize",
    "content_hash", "storage_path", "last_failure", "source_etag", "source_sequencer",
    "progress_done", "progress_total", "redriven_attempt",
    "images_described", "images_undescribed", "image_note", "parse_notes",
    "parser", "ocr_pages", "members_admitted",
}


def update(conn: Connection, doc_id: uuid.UUID, *, expect_attempt: int | None = None,
           expect_updated_at: datetime | None = None, **values: Any) -> bool:
    """Update fields; with ``expect_attempt`` only while the row is still processing that attempt,
    with ``expect_updated_at`` only if nothing changed it since it was read. The status is not among
    them: ``mark_done``, ``mark_failed``, ``reopen`` and the bulk failures below move it."""
    unknown = set(values) - _UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}"
                         + ("; a status changes through a named transition" if "status" in unknown else ""))
    return _set(conn, doc_id, values, expect_attempt=expect_attempt, expect_updated_at=expect_updated_at)


def _set(conn: Connection, doc_id: uuid.UUID, values: dict[str, Any], *, expect_attempt: int | None = None,
         expect_updated_at: datetime | None = None, fixed: str = "") -> bool:
    """One conditional UPDATE of ``values`` (parameters) and ``fixed`` (SQL assignments of this module)."""
    sets = ", ".join([*(f"{k} = %({k})s" for k in values), *([fixed] if fixed else []), "updated_at = now()"])
    where = "id = %(doc_id)s"
    if expect_attempt is not None:
        where += " AND attempt = %(expect_attempt)s AND status = 'processing'"
    if expect_updated_at is not None:
        where += " AND updated_at = %(expect_updated_at)s"
    cur = conn.execute(
        f"UPDATE documents SET {sets} WHERE {where}",
        {**values, "doc_id": doc_id, "expect_attempt": expect_attempt, "expect_updated_at": expect_updated_at},
    )
    return cur.rowcount > 0


# --- the transitions: every change of a document's status, each setting the same fields every time ----

_FINISHED = "completed_at = now(), last_failure = NULL"


def mark_done(conn: Connection, doc_id: uuid.UUID, *, chunk_count: int,
              vector_document_id: uuid.UUID | None) -> bool:
    """processing → done: indexed with ``chunk_count`` chunks (an archive: 0, its members hold them)."""
    return _set(conn, doc_id, {"chunk_count": chunk_count, "vector_document_id": vector_document_id},
                fixed=f"status = 'done', stage = 'done', error_message = NULL, {_FINISHED}")


def mark_failed(conn: Connection, doc_id: uuid.UUID, reason: str, *, stage: str | None = None,
                expect_attempt: int | None = None, expect_updated_at: datetime | None = None,
                file_gone: bool = False) -> bool:
    """→ error with ``reason`` (the R-DOC-4 sentence), at ``stage`` when one is named; conditional as
    ``update`` is. ``file_gone``: no stored original is left (it never arrived, or was refused and
    deleted), so the row stops naming one: ``has_file`` is false and a retry is refused. True if the
    row changed."""
    values: dict[str, Any] = {"error_message": reason, **({"stage": stage} if stage is not None else {})}
    if file_gone:
        values["storage_path"] = None
    return _set(conn, doc_id, values, expect_attempt=expect_attempt, expect_updated_at=expect_updated_at,
                fixed=f"status = 'error', {_FINISHED}")


def reopen(conn: Connection, doc_id: uuid.UUID, attempt: int) -> bool:
    """error → processing on a new ``attempt`` (a retry), queued, with nothing of the last one left."""
    return _set(conn, doc_id, {"attempt": attempt},
                fixed="status = 'processing', stage = 'queued', error_message = NULL, last_failure = NULL, "
                      "completed_at = NULL, progress_done = NULL, progress_total = NULL")


def fail_in_flight(conn: Connection, reason: str) -> int:
    """Every document still processing → error with ``reason``; how many.

    For a store that starts empty (the local runtime after a restart): its queued
    messages and stage artifacts are gone, so no stage will ever claim these rows.
    """
    cur = conn.execute(
        f"UPDATE documents SET status = 'error', error_message = %s, {_FINISHED}, updated_at = now() "
        "WHERE status = 'processing'",
        (reason,),
    )
    return cur.rowcount


def fail_unfiled(conn: Connection, collection: str, reason: str) -> int:
    """The unfiled rows (no base) of ``collection`` whose table was dropped → error with ``reason``,
    chunkless: the chunks they describe are gone. How many."""
    cur = conn.execute(
        f"""
        UPDATE documents SET status = 'error', error_message = %s, vector_document_id = NULL, chunk_count = 0,
               {_FINISHED}, updated_at = now()
         WHERE collection_name = %s AND kb_id IS NULL AND status <> 'error'
        """,
        (reason, collection),
    )
    return cur.rowcount


def stored_originals(conn: Connection) -> int:
    """How many documents name a stored original."""
    row = conn.execute("SELECT count(*) AS n FROM documents WHERE storage_path IS NOT NULL").fetchone()
    return int(row["n"]) if row else 0


def stale_processing(conn: Connection, *, idle_for: timedelta, limit: int) -> list[Document]:
    """Rows still processing that nothing has changed for ``idle_for``, the longest idle first."""
    rows = conn.execute(
        f"SELECT {_FIELDS} FROM documents WHERE status = 'processing' AND updated_at < now() - %s "
        "ORDER BY updated_at, id LIMIT %s",
        (idle_for, limit),
    ).fetchall()
    return [Document(**r) for r in rows]


def delete(conn: Connection, doc_id: uuid.UUID) -> bool:
    return conn.execute("DELETE FROM documents WHERE id = %s", (doc_id,)).rowcount > 0


def list_for_kb(conn: Connection, kb_id: uuid.UUID, *, limit: int, offset: int,
                status: str | None = None) -> list[Document]:
    """A page of a base's documents, newest first; with ``status``, only those in it."""
    rows = conn.execute(
        f"SELECT {_FIELDS} FROM documents WHERE kb_id = %s AND (%s::text IS NULL OR status = %s) "
        "ORDER BY created_at DESC, id LIMIT %s OFFSET %s",
        (kb_id, status, status, limit, offset),
    ).fetchall()
    return [Document(**r) for r in rows]


def count_for_kb(conn: Connection, kb_id: uuid.UUID, status: str | None = None) -> int:
    row = conn.execute("SELECT count(*) AS n FROM documents WHERE kb_id = %s AND (%s::text IS NULL OR status = %s)",
                       (kb_id, status, status)).fetchone()
    assert row is not None
    return int(row["n"])


def status_counts(conn: Connection, *, kb_ids: list[uuid.UUID]) -> dict[str, int]:
    row = conn.execute(
        """
        SELECT count(*) FILTER (WHERE status = 'processing') AS processing_count,
               count(*) FILTER (WHERE status = 'done')       AS indexed_count,
               count(*) FILTER (WHERE status = 'error')      AS failed_count,
               count(*)                                       AS document_count,
               coalesce(sum(chunk_count) FILTER (WHERE status = 'done'), 0) AS chunk_count
          FROM documents WHERE kb_id = ANY(%s)
        """,
        (kb_ids,),
    ).fetchone()
    assert row is not None
    return {k: int(v) for k, v in row.items()}
