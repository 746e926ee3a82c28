"""S3 drops (R-UP-3): an object written under ``inbox/<kb_id>/<path>`` opens (or replaces) a
document in that base; removing the object removes the document."""

from __future__ import annotations

import logging

from sluice.access.resolve import RECIPIENTS
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db.documents import Document
from sluice.ingest.events import ObjectEvent
from sluice.ingest.parse import parse_document
from sluice.ingest.retire import delete_row_and_chunks, forget_objects
from sluice.ingest.runner import StageContext
from sluice.storage import display_name, inbox_kb_id

log = logging.getLogger("sluice.ingest")


def source_path_of(bucket: str, key: str) -> str:
    return f"s3://{bucket}/{key}"


def _sequencer_key(sequencer: str) -> str:
    # S3 sequencers compare as hex strings of equal length, not as written.
    return sequencer.upper().rjust(32, "0")


def _older_than(event: ObjectEvent, doc: Document) -> bool:
    if not event.sequencer or not doc.source_sequencer:
        return False
    return _sequencer_key(event.sequencer) < _sequencer_key(doc.source_sequencer)


def on_inbox_event(ctx: StageContext, event: ObjectEvent) -> None:
    """A write opens (or replaces) the document at its address, a removal deletes it.

    Events arrive at least once and in any order. What decides is the object as it
    is now, read inside the address lock: an event whose ETag is not the current
    object's (or a creation of an object gone since, or a removal of one present
    again) is stale and changes nothing; where S3 sends a sequencer, an event
    older than the row's is stale too. A duplicate of the current content finds a
    row with its ETag and changes nothing.
    """
    kb_id = inbox_kb_id(event.key)
    if kb_id is None:
        log.warning("ignoring an inbox object outside inbox/<kb_id>/<path>", extra={"key_prefix": "inbox"})
        return
    source_path = source_path_of(ctx.store.bucket, event.key)
    current = ctx.store.head(event.key)
    opened: Document | None = None
    removed: list[Document] = []
    with ctx.uow() as conn:
        kb = kb_repo.get(conn, kb_id)
        if kb is None:
            log.warning("ignoring an inbox object for a base that does not exist", extra={"kb_id": str(kb_id)})
            return
        if kb.scope == RECIPIENTS:
            # R-ACC-6: a shared pool's documents are read by their recipients, which a drop names none of.
            log.warning("ignoring an inbox object for a shared pool: share through POST /pools/documents",
                        extra={"kb_id": str(kb_id)})
            return
        doc_repo.lock_address(conn, kb_id, source_path)
        rows = doc_repo.by_address(conn, kb_id, source_path)
        latest = rows[0] if rows else None
        if latest is not None and _older_than(event, latest):
            return
        if not event.created:
            if current is not None:
                return  # written again since; that write's event decides
            # an archive's members go with it (R-ARC-2)
            removed = rows + doc_repo.archive_members(conn, kb_id, source_path)
            for row in removed:
                delete_row_and_chunks(conn, row)
        else:
            etag = (event.etag or "").strip('"')
            if current is None or (etag and current.etag != etag):
                return  # overwritten or removed since; a later event carries the current state
            if latest is not None and latest.source_etag == current.etag:
                return  # this content already has its row
            for row in rows:
                if row.status == "processing":
                    # Superseded before it finished: it has no chunks, and its stages will find no row.
                    delete_row_and_chunks(conn, row)
            opened = doc_repo.insert(
                conn, kb_id=kb.id, org_id=kb.org_id, collection_name=kb.collection_name,
                filename=display_name(event.key), filesize=current.size, storage_path=event.key,
                source="s3_drop", source_path=source_path, source_etag=current.etag,
                source_sequencer=event.sequencer,
                replaces_document_id=next((r.id for r in rows if r.status != "processing"), None),
            )
    for row in removed:
        forget_objects(ctx.store, row, keep=event.key)
    if opened is not None:
        parse_document(ctx, opened.id, opened.attempt)
