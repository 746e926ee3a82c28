"""Which stage a queue message goes to: the ingest queue's objects and jobs, and the stage
artifacts that run the chunk and embed stages."""

from __future__ import annotations

import logging

from sluice.ingest.arrivals import on_object_created, on_upload_arrived
from sluice.ingest.chunk import chunk_document
from sluice.ingest.describe import describe_document
from sluice.ingest.embed import embed_document
from sluice.ingest.events import ObjectEvent, ParseJob
from sluice.ingest.inbox import on_inbox_event
from sluice.ingest.parse import parse_document
from sluice.ingest.runner import StageContext
from sluice.storage import parse_stage_key

log = logging.getLogger("sluice.ingest")


def on_ingest_item(ctx: StageContext, item: ObjectEvent | ParseJob) -> None:
    """One item of the ingest queue: an upload, an inbox drop or removal, or a retry's job."""
    if isinstance(item, ParseJob):
        parse_document(ctx, item.document_id, item.attempt)
    elif item.key.startswith("inbox/"):
        on_inbox_event(ctx, item)
    elif item.created and item.key.startswith("incoming/"):
        on_upload_arrived(ctx, item.key)
    elif item.created and item.key.startswith("rag/"):
        on_object_created(ctx, item.key)


def on_stage_artifact(ctx: StageContext, item: ObjectEvent | ParseJob) -> None:
    """A new stage artifact runs the next stage: parsed text → chunk, chunks → embed, and a PDF's
    images (image description on) → describe, which writes the parsed text."""
    if not isinstance(item, ObjectEvent) or not item.created:
        return
    ref = parse_stage_key(item.key)
    if ref is None:
        log.warning("ignoring an unknown stage object", extra={"key_prefix": item.key[:40]})
        return
    stage = {"parsed": chunk_document, "chunks": embed_document, "images": describe_document}[ref.stage]
    stage(ctx, ref.document_id, ref.attempt)
