"""Tracked documents through their knowledge base (R-ACC-2): reading, listing, status
counts (R-DOC-3), parsed text and download (R-DOC-1), delete (R-DOC-6), retry (R-DOC-5)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sluice.access import resolve_base, resolve_collection
from sluice.db import documents as doc_repo
from sluice.db.connection import Connection
from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import CollectionNotFoundError, NotFoundError, StoredFileMissingError, ValidationError
from sluice.identity import Principal
from sluice.ingest.artifacts import read_parsed
from sluice.ingest.events import ParseJob
from sluice.storage import JobQueue, ObjectStore, content_key, stage_key
from sluice.vectors import store as vector_store


def get_document(conn: Connection, p: Principal, doc_id: str, *, write: bool = False,
                 for_update: bool = False) -> Document:
    try:
        ident = uuid.UUID(doc_id)
    except ValueError:
        raise CollectionNotFoundError() from None
    doc = doc_repo.get(conn, ident, for_update=for_update)
    if doc is None or doc.kb_id is None:
        raise CollectionNotFoundError()
    resolve_base(conn, p, doc.kb_id, write=write)
    return doc


# --- status (R-DOC-3) --------------------------------------------------------------------------

@dataclass(frozen=True)
class IngestionCounts:
    processing: int
    indexed: int
    failed: int
    documents: int
    chunks: int

    @property
    def indexing_status(self) -> str:
        # A failed document is terminal: it shows in failed and never holds the answer at indexing.
        return "indexing" if self.processing else "complete"


def _counts(conn: Connection, kb_ids: list[uuid.UUID]) -> IngestionCounts:
    row = doc_repo.status_counts(conn, kb_ids=kb_ids)
    return IngestionCounts(processing=row["processing_count"], indexed=row["indexed_count"],
                           failed=row["failed_count"], documents=row["document_count"], chunks=row["chunk_count"])


def kb_ingestion(conn: Connection, p: Principal, kb_id: str) -> tuple[KnowledgeBase, IngestionCounts]:
    """The documents this base lists, not everything under its collection name (another base may share it)."""
    kb = resolve_base(conn, p, kb_id)
    return kb, _counts(conn, [kb.id])


def collection_info(conn: Connection, p: Principal, name: str) -> tuple[list[KnowledgeBase], IngestionCounts]:
    """The collection as the caller reaches it: the bases of that name they may read."""
    bases = resolve_collection(conn, p, name)
    return bases, _counts(conn, [b.id for b in bases])


@dataclass
class DocumentPage:
    documents: list[Document]
    total: int
    limit: int
    offset: int

    @property
    def next_offset(self) -> int | None:
        end = self.offset + len(self.documents)
        return end if end < self.total else None


def list_documents(conn: Connection, p: Principal, kb_id: str, *, limit: int, offset: int) -> DocumentPage:
    kb = resolve_base(conn, p, kb_id)
    return DocumentPage(doc_repo.list_for_kb(conn, kb.id, limit=limit, offset=offset),
                        doc_repo.count_for_kb(conn, kb.id), limit, offset)


# --- content and file --------------------------------------------------------------------------

def parsed_text(store: ObjectStore, doc: Document) -> str:
    """What the parse stage read from the file: the kept copy, else the current attempt's artifact."""
    try:
        return store.get(content_key(doc.id)).decode("utf-8")
    except StoredFileMissingError:
        pass
    try:
        return read_parsed(store, doc.id, doc.attempt).text
    except StoredFileMissingError:
        raise NotFoundError("This document has no parsed text yet.") from None


def download_url(store: ObjectStore, doc: Document, *, expires_in: int) -> str:
    """A short-lived GET URL for the stored original."""
    if not doc.storage_path or store.head(doc.storage_path) is None:
        raise NotFoundError("This document has no stored file.")
    return store.presigned_get(doc.storage_path, expires_in=expires_in, filename=doc.filename)


# --- delete (R-DOC-6) --------------------------------------------------------------------------

def delete_document(conn: Connection, p: Principal, doc_id: str) -> Document:
    """Delete the row and its chunks in the caller's transaction; the objects go after the commit.

    The row lock is what the embed stage's write takes too: whichever commits
    second finds the other's result, so a document deleted while indexing keeps
    no chunks.
    """
    doc = get_document(conn, p, doc_id, write=True, for_update=True)
    vector_store.delete_document_chunks(conn, doc.collection_name, doc.vector_document_id or doc.id)
    doc_repo.delete(conn, doc.id)
    return doc


def stored_objects(doc: Document) -> list[str]:
    """Every object Sluice holds for a document: the file, its text, its stage artifacts."""
    keys = [content_key(doc.id)]
    keys += [stage_key(stage, doc.id, n) for stage in ("parsed", "chunks") for n in range(1, doc.attempt + 1)]
    if doc.storage_path:
        keys.append(doc.storage_path)
    return keys


# --- retry (R-DOC-5) ---------------------------------------------------------------------------

def retry_document(conn: Connection, p: Principal, store: ObjectStore, doc_id: str) -> Document:
    """Open a new attempt for a failed document whose original is still stored.

    The caller commits and then sends ``send_retry(queue, doc)``: the job is for an
    attempt the row already records, so it can never find the row behind it.
    """
    doc = get_document(conn, p, doc_id, write=True, for_update=True)
    if doc.status != "error":
        raise ValidationError(
            f"Only a failed document can be retried; this one is {doc.status}.",
            fields={"status": f"The document is {doc.status}, not error."},
        )
    if not doc.storage_path or store.head(doc.storage_path) is None:
        raise ValidationError(
            "This document has no stored file to read again; upload it again instead.",
            fields={"storage_path": "No stored file."},
        )
    attempt = doc.attempt + 1
    doc_repo.update(conn, doc.id, attempt=attempt, status="processing", stage="queued", error_message=None,
                    last_failure=None, completed_at=None, progress_done=None, progress_total=None)
    refreshed = doc_repo.get(conn, doc.id)
    assert refreshed is not None
    return refreshed


def send_retry(queue: JobQueue, doc: Document) -> None:
    queue.send(ParseJob(doc.id, doc.attempt).message())
