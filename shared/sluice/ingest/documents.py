"""Tracked documents through their knowledge base (R-ACC-2): reading, listing, status
counts (R-DOC-3), parsed text and download (R-DOC-1), delete (R-DOC-6), retry (R-DOC-5)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sluice.access import resolve_base, resolve_collection
from sluice.access.shared import check_manager, check_recipient, is_shared
from sluice.admission import ParameterReader, admit_retry, pool_owners
from sluice.config import PoolSettings
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db import recipients as recipient_repo
from sluice.db.connection import Connection
from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.db.recipients import PoolEntry
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
    if is_shared(conn, doc):
        # R-ACC-6: a shared document is its recipients' own, each in their private pool; to anybody
        # else (its sharer included) it answers as an absent id does.
        check_recipient(conn, p, doc)
        return doc
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


def list_documents(conn: Connection, p: Principal, kb_id: str, *, limit: int, offset: int,
                   status: str | None = None) -> DocumentPage:
    """A page of a base's documents, newest first, and how many there are (of ``status``, when given)."""
    kb = resolve_base(conn, p, kb_id)
    return DocumentPage(doc_repo.list_for_kb(conn, kb.id, limit=limit, offset=offset, status=status),
                        doc_repo.count_for_kb(conn, kb.id, status), limit, offset)


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


@dataclass(frozen=True)
class Removal:
    """What a delete did: ``gone`` when the document itself went (row, chunks; its objects are next)."""

    document: Document
    gone: bool


def remove_document(conn: Connection, p: Principal, doc_id: str) -> Removal:
    """DELETE /rag/documents/{id}: the document, or for a shared one the caller's access to it.

    A recipient's delete strips their row only; the last recipient's takes the document with it
    (R-ACC-6). The row lock orders two last recipients deleting at once: the second finds one
    recipient fewer, or the row gone.
    """
    doc = get_document(conn, p, doc_id, write=True, for_update=True)
    if is_shared(conn, doc):
        return _strip(conn, doc, p.user_id)
    return Removal(delete_document(conn, p, doc_id), True)


def _strip(conn: Connection, doc: Document, user_id: str) -> Removal:
    recipient_repo.remove(conn, doc.id, user_id)
    if recipient_repo.count(conn, doc.id) > 0:
        return Removal(doc, False)
    vector_store.delete_document_chunks(conn, doc.collection_name, doc.vector_document_id or doc.id)
    doc_repo.delete(conn, doc.id)
    return Removal(doc, True)


# --- the private pool and its shared documents (R-ACC-5, R-ACC-6) -------------------------------

@dataclass
class PoolPage:
    entries: list[PoolEntry]
    total: int
    limit: int
    offset: int

    @property
    def next_offset(self) -> int | None:
        end = self.offset + len(self.entries)
        return end if end < self.total else None


def list_private_pool(conn: Connection, p: Principal, *, limit: int, offset: int) -> PoolPage:
    """GET /pools/documents: the caller's own private documents and those shared with them."""
    entries, total = recipient_repo.private_pool(conn, p.user_id, p.org_id, limit=limit, offset=offset)
    return PoolPage(entries, total, limit, offset)


def _managed(conn: Connection, p: Principal, doc_id: str) -> Document:
    try:
        ident = uuid.UUID(doc_id)
    except ValueError:
        raise CollectionNotFoundError() from None
    doc = doc_repo.get(conn, ident, for_update=True)
    if doc is None or not is_shared(conn, doc):
        raise CollectionNotFoundError()
    check_manager(p, doc)
    return doc


def revoke_recipient(conn: Connection, p: Principal, doc_id: str, user_id: str) -> Removal:
    """DELETE /pools/documents/{id}/recipients/{user_id}: the sharer takes one recipient's access away.

    A user who is not a recipient is "not found"; the last recipient revoked takes the document.
    """
    doc = _managed(conn, p, doc_id)
    if user_id not in recipient_repo.of(conn, doc.id):
        raise NotFoundError("This user is not a recipient of the document.")
    return _strip(conn, doc, user_id)


def delete_shared(conn: Connection, p: Principal, doc_id: str) -> Removal:
    """DELETE /pools/documents/{id}: the sharer deletes a shared document for every recipient."""
    doc = _managed(conn, p, doc_id)
    vector_store.delete_document_chunks(conn, doc.collection_name, doc.vector_document_id or doc.id)
    doc_repo.delete(conn, doc.id)
    return Removal(doc, True)


def stored_objects(doc: Document) -> list[str]:
    """Every object Sluice holds for a document: the file, its text, its stage artifacts."""
    keys = [content_key(doc.id)]
    # images: a PDF's, for the describe step (R-PARSE-6); ocr: the pages Textract recognised
    stages = ("parsed", "chunks", "images", "ocr")
    keys += [stage_key(stage, doc.id, n) for stage in stages for n in range(1, doc.attempt + 1)]
    if doc.storage_path:
        keys.append(doc.storage_path)
    return keys


# --- retry (R-DOC-5) ---------------------------------------------------------------------------

def retry_document(conn: Connection, p: Principal, store: ObjectStore, doc_id: str, settings: PoolSettings,
                   read_parameter: ParameterReader | None = None) -> Document:
    """Open a new attempt for a failed document whose original is still stored.

    A retry is an upload (issue 37): admitted like one (``admission.admit_retry``: the kill switch,
    the limits of the pool it is in, counted for the caller in a shared one) and capped per document.
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
    if is_shared(conn, doc):
        owners = [p.user_id]  # a recipient retries it in their own pool
    else:
        kb = kb_repo.get(conn, doc.kb_id) if doc.kb_id else None
        owners = pool_owners(kb) if kb is not None else []
    # Every attempt after the first is a retry: only ``reopen`` (here) opens one.
    admit_retry(conn, owners, doc.attempt - 1, settings, read_parameter)
    attempt = doc.attempt + 1
    doc_repo.reopen(conn, doc.id, attempt)
    refreshed = doc_repo.get(conn, doc.id)
    assert refreshed is not None
    return refreshed


def send_retry(queue: JobQueue, doc: Document) -> None:
    queue.send(ParseJob(doc.id, doc.attempt).message())
