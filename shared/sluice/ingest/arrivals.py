"""Objects arriving under ``rag/`` and ``incoming/``: each is the file a document row awaits, or
is deleted (an object without a row would be stored forever)."""

from __future__ import annotations

import logging

from sluice.db import documents as doc_repo
from sluice.db.documents import Document
from sluice.ingest.parse import parse_document, too_large
from sluice.ingest.runner import StageContext, fail_document
from sluice.storage import incoming_document_id

log = logging.getLogger("sluice.ingest")


def on_object_created(ctx: StageContext, key: str) -> None:
    """An object arrived under ``rag/``: parse it for the document that expects it."""
    with ctx.uow() as conn:
        doc = doc_repo.by_storage_path(conn, key)
    if doc is None:
        # No row expects this object (its document was deleted, or the key was never handed out).
        log.warning("deleting an object no document expects", extra={"key_prefix": key.split("/")[0]})
        ctx.store.delete(key)
        return
    # The object's own event always starts the first attempt: a retry sends its own
    # job, so a late copy of this event must not run inside the retry's attempt.
    parse_document(ctx, doc.id, 1)


def on_upload_arrived(ctx: StageContext, key: str) -> None:
    """A presigned POST landed: the first arrival becomes the document's stored original.

    The POST's fields stay valid until they expire, so the same upload can arrive
    again, even after indexing. Only an arrival for a document still waiting for
    its file is moved to the storage key (whose own event then parses it); any
    other is deleted, so what is served and re-read is always what was indexed.
    """
    doc_id = incoming_document_id(key)
    with ctx.uow() as conn:
        doc = doc_repo.get(conn, doc_id) if doc_id is not None else None
    arrived = ctx.store.head(key)
    if arrived is None:
        return  # a redelivery of an arrival already handled
    if doc is None or doc.storage_path is None or not _awaits_file(ctx, doc, doc.storage_path):
        log.warning("deleting an upload no document awaits", extra={"document_id": str(doc_id)})
    elif arrived.size > ctx.settings.max_upload_bytes:
        # S3 enforces the POST policy's size range; a store that does not (moto) is caught here.
        fail_document(ctx, doc.id, 1, "queued", too_large(ctx.settings), file_gone=True)
    else:
        ctx.store.copy(key, doc.storage_path, metadata={"document-id": str(doc.id)})
    ctx.store.delete(key)


def _awaits_file(ctx: StageContext, doc: Document, storage_path: str) -> bool:
    """Whether a document is still waiting for its presigned upload to arrive."""
    return doc.is_current(1) and doc.stage == "queued" and ctx.store.head(storage_path) is None
