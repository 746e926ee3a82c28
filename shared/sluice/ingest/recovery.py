"""Documents the pipeline lost track of: rows still ``processing`` whose next message is gone, which
nothing would ever move again (the seeds' first incident: orphaned processing rows).

On AWS a message is lost between stages when a function is redeployed mid-flight or an S3
notification is misconfigured for a while; the reaper (``reap``, on a schedule) finds such rows by
their silence and resumes each once from its last saved step, then fails it with a sentence. The
local runtime's object store and queues live in memory, so after a restart everything in flight
is gone at once (``fail_in_flight``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sluice import jobs
from sluice.db import documents as doc_repo
from sluice.db.documents import Document
from sluice.ingest.events import ParseJob, object_created_message
from sluice.ingest.runner import StageContext
from sluice.storage import JobQueue, ObjectStore, incoming_prefix, stage_key

log = logging.getLogger("sluice.ingest")

LOCAL_RESET = ("The local runtime restarted while this document was being indexed, and its local object "
               "store (kept in memory) started empty; upload the document again.")
NEVER_ARRIVED = ("The file never arrived: the upload link expired before anything was posted to it. "
                 "Ask for a new upload and post the file again.")
STORED_FILE_GONE = ("Indexing was interrupted and the document's stored file is gone, so it cannot resume; "
                    "upload the document again.")


def interrupted(stage: str, idle_seconds: int) -> str:
    """The error of a row that stalled, was resumed once, and stalled again."""
    return (f"Indexing was interrupted while {stage}: nothing moved for {_duration(idle_seconds)}, even after it "
            "was resumed once from its last saved step. Retry the document to index it again.")


def _duration(seconds: int) -> str:
    return f"{seconds // 3600} h {seconds % 3600 // 60} min" if seconds >= 3600 else f"{seconds // 60} min"


@dataclass(frozen=True)
class StageQueues:
    """The queue each stage reads: where a resumed document's next message goes."""

    ingest: JobQueue
    chunk: JobQueue
    embed: JobQueue


@dataclass
class Reaped:
    redriven: int = 0  # resumed from their last saved step
    failed: int = 0  # stalled again after that, or with nothing left to resume from
    waiting: int = 0  # stalled again, but their stage's queue is busy: left for the next sweep


def reap(ctx: StageContext, queues: StageQueues, *, limit: int = 500) -> Reaped:
    """One sweep over the rows idle for longer than ``stale_after_seconds``, the longest idle first.

    A row is resumed once per attempt from its last saved step (chunks → embed, parsed text →
    chunk, stored original → parse, a presigned upload that landed → its arrival). Idle again
    after that, it fails, unless its stage's queue still holds messages no consumer has taken
    (a backlog, not a loss). With nothing to resume from it fails at once. Every change is
    conditional on the row being as it was read, so a stage that moves it meanwhile wins.
    """
    with ctx.uow() as conn:
        stuck = doc_repo.stale_processing(conn, idle_for=timedelta(seconds=ctx.settings.stale_after_seconds),
                                          limit=limit)
    return reap_listed(ctx, queues, stuck)


def reap_listed(ctx: StageContext, queues: StageQueues, stuck: Sequence[Document]) -> Reaped:
    """``reap`` on rows as a read listed them, however long ago: each change is conditional on its row
    still being as listed, so a row that moved or went meanwhile is left alone."""
    idle = ctx.settings.stale_after_seconds
    reaped, backlog = Reaped(), _Backlog()
    for doc in stuck:
        try:
            _reap_one(ctx, queues, backlog, doc, idle, reaped)
        except Exception:
            log.exception("could not reap a document", extra={"document_id": str(doc.id)})
    if stuck:
        log.warning("reaped stalled documents", extra={"stalled": len(stuck), **reaped.__dict__})
    return reaped


def _reap_one(ctx: StageContext, queues: StageQueues, backlog: _Backlog, doc: Document, idle: int,
              reaped: Reaped) -> None:
    resume = _resume_from(ctx.store, queues, doc)
    if resume is None:
        # Nothing to resume from: no original is stored, and the row stops naming one (R-DOC-5).
        reaped.failed += _fail(ctx, doc, NEVER_ARRIVED if _awaited_its_upload(doc) else STORED_FILE_GONE,
                               file_gone=True)
        return
    queue, message = resume

    def mark_redriven() -> bool:
        with ctx.uow() as conn:
            return doc_repo.update(conn, doc.id, expect_attempt=doc.attempt, expect_updated_at=doc.updated_at,
                                   redriven_attempt=doc.attempt)

    def resend() -> None:
        queue.send(message)
        log.warning("resumed a stalled document", extra={"document_id": str(doc.id), "stage": doc.stage})

    outcome = jobs.settle_stalled(redriven=doc.redriven_attempt == doc.attempt, mark_redriven=mark_redriven,
                                  resend=resend, backlog=lambda: backlog.busy(queue),
                                  fail=lambda: bool(_fail(ctx, doc, interrupted(doc.stage, idle))))
    if outcome:
        setattr(reaped, outcome, getattr(reaped, outcome) + 1)


def _resume_from(store: ObjectStore, queues: StageQueues, doc: Document) -> tuple[JobQueue, dict[str, Any]] | None:
    """The queue and message that run the stage after the document's last saved step, if any."""
    # "images" is the describe step's input (R-PARSE-6), read from the embed queue.
    for artifact, queue in (("chunks", queues.embed), ("parsed", queues.chunk), ("images", queues.embed)):
        key = stage_key(artifact, doc.id, doc.attempt)
        if store.exists(key):
            return queue, object_created_message(key)
    if doc.storage_path and store.exists(doc.storage_path):
        return queues.ingest, ParseJob(doc.id, doc.attempt).message()
    landed = store.first_key(incoming_prefix(doc.id)) if doc.attempt == 1 else None
    if landed is not None:
        return queues.ingest, object_created_message(landed)
    return None


def _awaited_its_upload(doc: Document) -> bool:
    """A presigned upload's row before any byte arrived: queued, of no known type, from no archive."""
    return doc.source == "upload" and doc.stage == "queued" and doc.filetype is None and doc.source_path is None


def _fail(ctx: StageContext, doc: Document, reason: str, *, file_gone: bool = False) -> int:
    with ctx.uow() as conn:
        failed = doc_repo.mark_failed(conn, doc.id, reason, expect_attempt=doc.attempt,
                                      expect_updated_at=doc.updated_at, file_gone=file_gone)
    if failed:
        log.warning("failed a stalled document", extra={"document_id": str(doc.id), "stage": doc.stage})
    return int(failed)


class _Backlog:
    """Whether a queue holds messages no consumer has taken, asked once per queue per sweep."""

    def __init__(self) -> None:
        self._seen: dict[str, bool] = {}

    def busy(self, queue: JobQueue) -> bool:
        if queue.queue_url not in self._seen:
            self._seen[queue.queue_url] = queue.waiting() > 0
        return self._seen[queue.queue_url]
