"""Chat work the queue lost track of, found by the reaper's schedule (functions/reaper) beside the
documents it sweeps (sluice.ingest.recovery): nothing in a conversation stays "indexing" or
"pending" for ever.

On AWS an attachment's job is redelivered and then dead-lettered, so a stall is rare: a worker
redeployed mid-flight, a dead-letter handler that failed too. An attachment idle for longer than
``stale_after_seconds`` is resumed once on the chat queue from what its row says (the worker's
steps resume: stored batches, kept summaries); idle again after that it fails with a sentence,
unless the chat queue still holds messages no worker has taken (a backlog, not a loss). A
presigned chat upload still ``pending`` that long fails: its link expired long ago.

Everything here stays on the chat side: the chat queue, ``chat_*`` rows and ``chat-incoming/``
objects. Nothing of a conversation is sent to a knowledge base's queues; an attachment registered
into a base is that base's document, swept with the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from sluice import jobs
from sluice.chat.attachments import AttachmentJob
from sluice.chat.resources import ChatResources
from sluice.db import chat as repo
from sluice.db.chat import Attachment, ChatFile
from sluice.db.connection import UnitOfWork
from sluice.storage import chat_incoming_key

log = logging.getLogger("sluice.chat")

NEVER_ARRIVED = ("The file never arrived: the upload link expired before anything was posted to it. "
                 "Upload the file again.")
NEVER_CHECKED = ("The file arrived but was never checked (its arrival notice was lost). Upload the file "
                 "again.")
OBJECTS_RESET = ("The local runtime restarted and its object store (kept in memory) started empty, so this "
                 "file's stored original is gone. Upload the file again.")


def stalled(status: str, idle_seconds: int) -> str:
    """The error of an attachment that stalled, was resumed once, and stalled again."""
    span = (f"{idle_seconds // 3600} h {idle_seconds % 3600 // 60} min" if idle_seconds >= 3600
            else f"{idle_seconds // 60} min")
    return (f"The attachment's work was interrupted while {status}: nothing moved for {span}, even after it "
            "was resumed once. Attach the file again.")


@dataclass
class ChatReaped:
    redriven: int = 0  # attachments resumed on the chat queue
    failed: int = 0  # attachments idle again after that
    waiting: int = 0  # idle again, but the chat queue holds a backlog: left for the next sweep
    uploads_failed: int = 0  # presigned chat uploads still pending


def reap(res: ChatResources, *, backlog: Callable[[], bool], limit: int = 500) -> ChatReaped:
    """One sweep; ``backlog`` says whether the chat queue holds messages no worker has taken
    (asked at most once). Every change is conditional on the row being as it was read, so a
    worker that moves it meanwhile wins."""
    idle = res.settings.stale_after_seconds
    with res.uow() as conn:
        stuck = repo.stale_attachments(conn, idle_for=timedelta(seconds=idle), limit=limit)
        pending = repo.stale_pending_files(conn, older_than=timedelta(seconds=idle), limit=limit)
    reaped = ChatReaped()
    busy: list[bool] = []

    def queue_busy() -> bool:
        if not busy:
            busy.append(backlog())
        return busy[0]

    for attachment in stuck:
        try:
            _reap_attachment(res, attachment, idle, queue_busy, reaped)
        except Exception:
            log.exception("could not reap an attachment", extra={"attachment_id": str(attachment.id)})
    for file in pending:
        try:
            reaped.uploads_failed += _reap_upload(res, file)
        except Exception:
            log.exception("could not reap a chat upload", extra={"file_id": str(file.id)})
    if stuck or pending:
        log.warning("reaped stalled chat work", extra={"stalled": len(stuck), "pending": len(pending),
                                                      **reaped.__dict__})
    return reaped


def _reap_attachment(res: ChatResources, attachment: Attachment, idle: int, queue_busy: Callable[[], bool],
                     reaped: ChatReaped) -> None:
    def mark_redriven() -> bool:
        with res.uow() as conn:
            return repo.mark_redriven(conn, attachment)

    def resend() -> None:
        res.send_job(AttachmentJob(attachment.id, attachment.attempt).message())
        log.warning("resumed a stalled attachment", extra={"attachment_id": str(attachment.id),
                                                           "status": attachment.status})

    def fail() -> bool:
        with res.uow() as conn:
            return repo.fail_stale_attachment(conn, attachment, stalled(attachment.status, idle))

    outcome = jobs.settle_stalled(redriven=attachment.redriven_attempt == attachment.attempt,
                                  mark_redriven=mark_redriven, resend=resend, backlog=queue_busy, fail=fail)
    if outcome:
        setattr(reaped, outcome, getattr(reaped, outcome) + 1)


def _reap_upload(res: ChatResources, file: ChatFile) -> int:
    landed = chat_incoming_key(file.id, file.filename)
    arrived = res.store.exists(landed)
    with res.uow() as conn:
        failed = repo.update_file(conn, file.id, expect_status="pending", status="failed",
                                  error_message=NEVER_CHECKED if arrived else NEVER_ARRIVED)
    if failed and arrived:
        res.store.delete_many([landed])
    return int(failed)


def fail_lost_files(uow: UnitOfWork) -> int:
    """The local runtime's start: its object store (moto, in memory) is empty, so every chat file that
    was stored, or was waiting for its presigned upload, lost its object. Each becomes failed with
    OBJECTS_RESET, so a download, the pages, attaching and registering answer that sentence rather
    than a link to nothing or a crash. Text already extracted stays in the database: an attachment
    of such a file still contributes it to a conversation's inline context."""
    with uow() as conn:
        count = repo.fail_stored_files(conn, OBJECTS_RESET)
    if count:
        log.warning("chat files whose objects a restart lost were failed", extra={"count": count})
    return count
