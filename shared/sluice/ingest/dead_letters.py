"""Dead letters of the stage queues (R-PARSE-5): the last delivery of a message failed, so the
document it was for becomes ``error``, with the summary its stage left or one naming the stage."""

from __future__ import annotations

import logging
import uuid

from sluice.db import documents as doc_repo
from sluice.ingest.events import ObjectEvent, ParseJob
from sluice.ingest.failures import dead_letter_summary
from sluice.ingest.inbox import source_path_of
from sluice.ingest.runner import StageContext
from sluice.storage import inbox_kb_id, incoming_document_id, parse_stage_key

log = logging.getLogger("sluice.ingest")


def on_dead_letter(ctx: StageContext, stage: str, item: ObjectEvent | ParseJob) -> None:
    """Only a row still processing on the message's attempt changes: a summary a stage already
    wrote is the innermost and is kept, and a message for an older attempt changes nothing."""
    target = _dead_letter_target(ctx, item)
    if target is None:
        return
    doc_id, attempt = target
    with ctx.uow() as conn:
        doc = doc_repo.get(conn, doc_id, for_update=True)
        if doc is None or not doc.is_current(attempt):
            return
        doc_repo.mark_failed(conn, doc_id, doc.last_failure or dead_letter_summary(stage), expect_attempt=attempt)
    log.warning("document failed after its last delivery", extra={"document_id": str(doc_id), "stage": stage})


def _dead_letter_target(ctx: StageContext, item: ObjectEvent | ParseJob) -> tuple[uuid.UUID, int] | None:
    if isinstance(item, ParseJob):
        return item.document_id, item.attempt
    ref = parse_stage_key(item.key)
    if ref is not None:
        return ref.document_id, ref.attempt
    if not item.created:
        return None
    arrived_for = incoming_document_id(item.key)
    if arrived_for is not None:
        return arrived_for, 1
    with ctx.uow() as conn:
        if item.key.startswith("inbox/"):
            kb_id = inbox_kb_id(item.key)
            if kb_id is None:
                return None
            etag = (item.etag or "").strip('"')
            rows = doc_repo.by_address(conn, kb_id, source_path_of(ctx.store.bucket, item.key))
            doc = next((r for r in rows if r.source_etag == etag), None)
        else:
            doc = doc_repo.by_storage_path(conn, item.key)
    return (doc.id, 1) if doc is not None else None
