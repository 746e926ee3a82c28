"""Attaching a file to a conversation, and the work that grades, indexes and summarises it (R-CHAT-2).

Grading is by the extracted text's tokens, counted with the bundled model's tokenizer:
0 fails with "No extractable text"; up to CHAT_FULL_TEXT_MAX_TOKENS the full text is
kept (``full_text``); above, the text is chunked, embedded into the attachments' own
table, scoped to the conversation, and an overview is written (``indexed``). A short
text is graded inside the request; everything else runs on the chat queue, off it.

The worker moves an attachment ``reading → indexing → summarizing → indexed``, with
the steps of the current status in ``progress_done``/``progress_total`` (embedding
batches, then model calls). Each step commits what it did under the attachment's row
lock and only if the row is still on the step it expected, so a duplicate delivery, a
continuation and a removal never write twice or write for a removed attachment. A
worker whose time is running out sends itself a continuation and stops; a redelivery
resumes where the last step committed. On AWS a message is never lost: a worker that
dies is redelivered, and after the last delivery the dead-letter handler settles the
attachment. Locally the queues do not survive a restart, so the runtime fails what a
restart interrupted (``fail_interrupted``): nothing stays "indexing" forever.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sluice import jobs
from sluice.chat import overview
from sluice.chat.conversations import attachments_with_files, owned_conversation
from sluice.chat.files import parse_id
from sluice.chat.resources import ChatResources
from sluice.chunking import Chunk, IngestionConfig, resolve_plan, split_text
from sluice.db import chat as repo
from sluice.db.chat import Attachment, AttachmentStatus, ChatFile, Tier
from sluice.db.connection import UnitOfWork
from sluice.errors import (
    AttachmentLimitError,
    ChatModelError,
    ConflictError,
    EmbeddingCallError,
    NotFoundError,
    SluiceError,
    TooManyChunksError,
)
from sluice.identity import Principal
from sluice.ingest.uploads import Accepted, FileBytes, IntoBase, accept
from sluice.vectors import attachments as chunk_store
from sluice.vectors.attachments import AttachmentChunk

log = logging.getLogger("sluice.chat")

JOB_KEY = "chat_attachment"
NO_TEXT = "No extractable text"
INTERRUPTED = "Interrupted by restart"
# A text this short is graded inside the request (counting it takes milliseconds), so a small file
# reads full_text at once; a longer one is counted by the worker.
INLINE_GRADE_CHARS = 200_000
# Seconds a step needs in hand before the worker starts it: an embedding batch, and a model call
# with its retries (sluice.llm.openai.DEFAULT_RETRY bounds one at 300 s).
STEP_SECONDS = 60.0
MODEL_STEP_SECONDS = 330.0

TimeLeft = Callable[[], float]


class StaleAttachment(Exception):
    """The attachment was removed, restarted, or moved on by another worker: this one stops."""


class AttachBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_id: uuid.UUID = Field(description="One of the caller's chat files (POST /files/upload).")


class RegisterBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kb_id: str = Field(min_length=1, max_length=100,
                       description="A knowledge base the caller may write; the attachment is copied into it.")


def attachment_not_found() -> NotFoundError:
    return NotFoundError("Attachment not found")


@dataclass(frozen=True)
class AttachmentJob:
    attachment_id: uuid.UUID
    attempt: int

    def message(self) -> dict[str, Any]:
        return {JOB_KEY: str(self.attachment_id), "attempt": self.attempt}

    @classmethod
    def from_message(cls, body: dict[str, Any]) -> AttachmentJob:
        return cls(uuid.UUID(str(body[JOB_KEY])), int(body["attempt"]))


def tier_for(tokens: int, res: ChatResources) -> Tier | None:
    """None for no text; small, medium or large by the thresholds of R-CHAT-2."""
    if tokens <= 0:
        return None
    if tokens <= res.settings.chat_full_text_max_tokens:
        return Tier.SMALL
    return Tier.MEDIUM if tokens <= res.settings.chat_large_tokens else Tier.LARGE


# --- the routes' side -------------------------------------------------------------------------

def attach(res: ChatResources, p: Principal, conversation_id: str, file_id: str | uuid.UUID
           ) -> tuple[Attachment, ChatFile]:
    """Attach the caller's file to the caller's conversation; grade it now when that is quick."""
    from sluice.chat.files import file_not_found

    with res.uow() as conn:
        conversation = owned_conversation(conn, p, conversation_id, for_update=True)
        file = repo.user_file(conn, p.user_id, parse_id(file_id, file_not_found()), with_text=True,
                              for_update=True)
        if file is None:
            raise file_not_found()
        if file.status != "ready":
            why = file.error_message or "it has not finished uploading, or its upload failed."
            raise ConflictError(f"This file cannot be attached: {why}",
                                details={"file_id": str(file.id), "status": file.status})
        existing = repo.attachment_of_file(conn, file.id)
        if existing is not None and existing.conversation_id != conversation.id:
            raise ConflictError("This file is attached to another conversation; upload it again to attach it "
                                "here.", details={"file_id": str(file.id)})
        if existing is not None and existing.status != "failed":
            raise ConflictError("This file is already attached to this conversation.",
                                details={"attachment_id": str(existing.id)})
        if existing is not None:
            # A failed attachment is attached again: the work restarts under a new attempt.
            chunk_store.delete_chunks(conn, existing.id)
            repo.restart_attachment(conn, existing.id, existing.attempt + 1)
            attachment = repo.attachment_by_id(conn, existing.id)
            assert attachment is not None
        else:
            limit = res.settings.chat_max_attachments
            if len(repo.attachments_of(conn, conversation.id)) >= limit:
                raise AttachmentLimitError(
                    f"A conversation holds at most {limit} attachments; remove one before attaching another.",
                    details={"limit": limit})
            attachment = repo.insert_attachment(conn, conversation.id, file.id, p.user_id)
    if file.parsed_content is None or len(file.parsed_content) <= INLINE_GRADE_CHARS:
        try:
            if _grade(res, attachment, file):
                _queue(res, attachment)
        except StaleAttachment:
            pass
        except Exception:
            # The worker grades it instead, with its redeliveries and dead-letter queue behind it.
            log.exception("grading an attachment in the request failed", extra={"attachment_id": str(attachment.id)})
            _queue(res, attachment)
    else:
        _queue(res, attachment)
    with res.uow() as conn:
        current = repo.attachment_by_id(conn, attachment.id)
    if current is None:
        raise attachment_not_found()  # removed while it was being graded
    return current, file


def _queue(res: ChatResources, attachment: Attachment) -> None:
    try:
        res.send_job(AttachmentJob(attachment.id, attachment.attempt).message())
    except Exception:
        log.exception("queueing an attachment failed", extra={"attachment_id": str(attachment.id)})
        with res.uow() as conn:
            repo.fail_attachment(conn, attachment.id, "The attachment could not be queued for indexing; attach "
                                 "the file again.", expect_attempt=attachment.attempt)
        raise


def list_attachments(res: ChatResources, p: Principal, conversation_id: str) -> list[tuple[Attachment, ChatFile]]:
    with res.uow() as conn:
        conversation = owned_conversation(conn, p, conversation_id)
        return attachments_with_files(conn, conversation.id)


def remove_attachment(res: ChatResources, p: Principal, conversation_id: str, attachment_id: str) -> ChatFile:
    """R-CHAT-4: the attachment's chunks, its file's row and record in one transaction, then the objects.

    A worker still at it finds the row gone at its next step and writes nothing more.
    """
    from sluice.chat.files import stored_keys

    with res.uow() as conn:
        conversation = owned_conversation(conn, p, conversation_id)
        attachment = repo.conversation_attachment(conn, conversation.id, parse_id(attachment_id,
                                                  attachment_not_found()), for_update=True)
        if attachment is None:
            raise attachment_not_found()
        file = repo.file_by_id(conn, attachment.file_id, for_update=True)
        chunk_store.delete_chunks(conn, attachment.id)
        repo.delete_attachment(conn, attachment.id)
        if file is not None:
            repo.delete_file(conn, file.id)
    if file is None:
        raise attachment_not_found()
    res.store.delete_many(stored_keys([file]))
    return file


def register(res: ChatResources, p: Principal, conversation_id: str, attachment_id: str, kb_id: str
             ) -> Accepted:
    """R-CHAT-4: copy an indexed attachment's original into a base the caller may write, through the
    ordinary upload path (resolved, admitted, stored under rag/ and indexed there). The document is
    the base's from then on: removing the attachment or the conversation leaves it."""
    if res.intake is None:
        raise RuntimeError("registering needs the knowledge-base intake")
    with res.uow() as conn:
        conversation = owned_conversation(conn, p, conversation_id)
        attachment = repo.conversation_attachment(conn, conversation.id, parse_id(attachment_id,
                                                  attachment_not_found()), for_update=True)
        if attachment is None:
            raise attachment_not_found()
        if attachment.status != "indexed":
            why = ("it was kept as full text and never chunked; upload the file to the knowledge base instead"
                   if attachment.status == "full_text" else f"it is {attachment.status}")
            raise ConflictError(f"Only an indexed attachment can be registered: {why}.",
                                details={"status": attachment.status})
        if attachment.registered_document_id is not None:
            raise ConflictError("This attachment is already registered.",
                                details={"document_id": str(attachment.registered_document_id)})
        file = repo.file_by_id(conn, attachment.file_id)
        assert file is not None
        if file.status != "ready":  # its original is gone (a local restart): nothing to copy
            raise ConflictError(f"This attachment's file cannot be registered: {file.error_message or file.status}",
                                details={"file_id": str(file.id), "status": file.status})
        data = res.store.get(file.storage_path)
        # The base is resolved for writing inside (404 Collection not found when out of reach); the
        # attachment's row lock, held meanwhile, keeps a second register from copying it twice.
        accepted = accept(res.intake(), p, IntoBase(kb_id), FileBytes(file.filename, data))
        repo.update_attachment(conn, attachment.id, registered_document_id=accepted.document.id)
    return accepted


def fail_interrupted(uow: UnitOfWork) -> int:
    """Every attachment a restart interrupted becomes failed, "Interrupted by restart" (local runtime)."""
    with uow() as conn:
        count = repo.fail_working_attachments(conn, INTERRUPTED)
    if count:
        log.warning("attachments interrupted by a restart were failed", extra={"count": count})
    return count


# --- the worker's side ----------------------------------------------------------------------

def run_job(res: ChatResources, job: AttachmentJob, time_left: TimeLeft) -> None:
    """Advance one attachment as far as the time allows; send a continuation if it is not done."""
    stage = "reading"  # the step at work, for a failure's summary

    def work(job: AttachmentJob) -> None:
        # Loaded inside the work, so a failure reading the rows is settled like one of its steps.
        nonlocal stage
        with res.uow() as conn:
            attachment = repo.attachment_by_id(conn, job.attachment_id)
            file = repo.file_by_id(conn, attachment.file_id, with_text=True) if attachment is not None else None
        if attachment is None or file is None or not attachment.is_current(job.attempt):
            return
        stage = attachment.status
        if attachment.status == "reading":
            if not _grade(res, attachment, file):
                return
            attachment = _reload(res, job)
            stage = attachment.status
        if attachment.status == "indexing":
            if not _index(res, attachment, file, time_left):
                res.send_job(job.message())
                return
            attachment = _reload(res, job)
            stage = attachment.status
        if attachment.status == "summarizing" and not _summarize(res, attachment, file, time_left):
            res.send_job(job.message())

    def retry_later(job: AttachmentJob, exc: BaseException) -> None:
        log.warning("attachment work failed; the queue will deliver it again", exc_info=exc,
                    extra={"attachment_id": str(job.attachment_id), "stage": stage})
        with res.uow() as conn:
            repo.update_attachment(conn, job.attachment_id, expect_attempt=job.attempt,
                                   last_failure=_summary(exc, stage))

    jobs.run(lambda: job, work, is_final=_final, fail=lambda job, exc: _fail(res, job, _summary(exc, stage)),
             retry_later=retry_later, stale=(StaleAttachment,))


def _reload(res: ChatResources, job: AttachmentJob) -> Attachment:
    with res.uow() as conn:
        attachment = repo.attachment_by_id(conn, job.attachment_id)
    if attachment is None or not attachment.is_current(job.attempt):
        raise StaleAttachment(str(job.attachment_id))
    return attachment


def _final(exc: BaseException) -> bool:
    """A refusal no redelivery changes: Sluice's own 4xx, or a provider's non-transient answer."""
    if isinstance(exc, EmbeddingCallError | ChatModelError):
        return not exc.transient
    return isinstance(exc, SluiceError) and 400 <= exc.status < 500


def _summary(exc: BaseException, stage: str) -> str:
    """The attachment's error_message: Sluice's own refusal whole, anything else named by its type and step."""
    if isinstance(exc, SluiceError) and 400 <= exc.status < 500:
        return exc.message
    kind = exc.kind if isinstance(exc, EmbeddingCallError | ChatModelError) else type(exc).__name__
    return (f"The attachment could not be processed ({kind} while {stage}) - attach the file again; if it "
            "fails again, the worker log has the full error.")


def _fail(res: ChatResources, job: AttachmentJob, message: str) -> None:
    with res.uow() as conn:
        repo.fail_attachment(conn, job.attachment_id, message, expect_attempt=job.attempt)


def _grade(res: ChatResources, attachment: Attachment, file: ChatFile) -> bool:
    """Count the text's tokens and settle the tier; True when the worker has indexing to do."""
    text = file.parsed_content or ""
    tokens = res.tokens().count(text) if text.strip() else 0
    tier = tier_for(tokens, res)
    chunk_count = batches = 0
    if tier is not None and tier != Tier.SMALL:
        chunks = _chunks(res, file)
        chunk_count, batches = len(chunks), math.ceil(len(chunks) / max(1, res.settings.embed_batch_size))
    with res.uow() as conn:
        current = repo.attachment_by_id(conn, attachment.id, for_update=True)
        if current is None or not current.is_current(attachment.attempt) or current.status != "reading":
            raise StaleAttachment(str(attachment.id))
        if tier is None:
            reason = f"{NO_TEXT}: {file.parse_error}" if file.parse_error else NO_TEXT
            repo.fail_attachment(conn, attachment.id, reason, tokens=0)
            return False
        status = repo.grade_attachment(conn, attachment.id, tier, tokens, chunk_count=chunk_count, batches=batches)
    return status == AttachmentStatus.INDEXING


def _chunks(res: ChatResources, file: ChatFile) -> list[Chunk]:
    """The attachment's chunks: the bundled model's plan, the same for every step (the split is
    deterministic, so a resumed worker embeds exactly the chunks it had not)."""
    embedder = res.embedder()
    plan = resolve_plan(IngestionConfig(), max_input_tokens=embedder.max_input_tokens)
    pages = [tuple(p) for p in file.parsed_pages] if file.parsed_pages else None
    chunks = split_text(file.parsed_content or "", plan, pages=pages)  # type: ignore[arg-type]
    if len(chunks) > res.settings.max_chunks_per_document:
        raise TooManyChunksError(f"This file would make {len(chunks):,} chunks, more than the "
                                 f"{res.settings.max_chunks_per_document:,} one document may have.")
    return chunks


def _index(res: ChatResources, attachment: Attachment, file: ChatFile, time_left: TimeLeft) -> bool:
    """Embed and store the batches not yet stored; True once every chunk is, and summarizing begins."""
    chunks = _chunks(res, file)
    size = max(1, res.settings.embed_batch_size)
    batches = math.ceil(len(chunks) / size)
    done = attachment.progress_done or 0
    embedder = res.embedder()
    while done < batches:
        if time_left() < STEP_SECONDS:
            return False
        batch = chunks[done * size:(done + 1) * size]
        vectors = embedder.embed_documents([c.content for c in batch])
        rows = [AttachmentChunk(attachment.id, attachment.conversation_id, c.index, c.content, v,
                                c.page_start, c.page_end) for c, v in zip(batch, vectors, strict=True)]
        with res.uow() as conn:
            _lock_step(conn, attachment, "indexing", done)
            chunk_store.insert_chunks(conn, rows)
            repo.update_attachment(conn, attachment.id, progress_done=done + 1, progress_total=batches)
        done += 1
    calls = overview.plan(len(chunks), window=res.settings.chat_overview_window_chunks,
                          fan_in=res.settings.chat_overview_fan_in, large=attachment.tier == "large")
    with res.uow() as conn:
        _lock_step(conn, attachment, "indexing", done)
        repo.start_summarizing(conn, attachment.id, chunk_count=len(chunks), calls=len(calls))
    return True


def _lock_step(conn: Any, attachment: Attachment, status: str, done: int) -> Attachment:
    """Lock the row and confirm it is still on this step; otherwise this worker is stale."""
    current = repo.attachment_by_id(conn, attachment.id, for_update=True)
    if (current is None or not current.is_current(attachment.attempt) or current.status != status
            or (current.progress_done or 0) != done):
        raise StaleAttachment(str(attachment.id))
    return current


def _summarize(res: ChatResources, attachment: Attachment, file: ChatFile, time_left: TimeLeft) -> bool:
    """Run the overview's calls not yet run; True once the overview is written."""
    with res.uow() as conn:
        chunks = chunk_store.chunk_texts(conn, attachment.id)
    s = res.settings
    calls = overview.plan(len(chunks), window=s.chat_overview_window_chunks, fan_in=s.chat_overview_fan_in,
                          large=attachment.tier == "large")
    model = res.chat_model()
    if model is None:
        _write_extractive(res, attachment, chunks, calls, "Extractive overview: the leading sentences of each "
                          "part of the document (no chat model is configured).")
        return True
    outputs = list(attachment.partial_summaries)
    windows = sum(1 for c in calls if c.kind == "map")
    truncated = False
    while len(outputs) < len(calls):
        if time_left() < MODEL_STEP_SECONDS:
            return False
        index = len(outputs)
        system, user, max_tokens = overview.prompt(calls[index], index, filename=file.filename, chunks=chunks,
                                                   outputs=outputs, windows=windows,
                                                   overview_tokens=s.chat_overview_tokens)
        try:
            completion = model.complete(system, user, max_tokens=max_tokens)
        except ChatModelError as exc:
            if exc.transient:
                raise
            _write_extractive(res, attachment, chunks, calls,
                              f"Extractive overview: the chat model failed ({exc.kind}), so the leading "
                              "sentences of each part of the document stand in for a written overview.")
            return True
        truncated = completion.truncated
        outputs.append(completion.text)
        with res.uow() as conn:
            _lock_step(conn, attachment, "summarizing", index)
            repo.update_attachment(conn, attachment.id, partial_summaries=outputs, progress_done=index + 1)
    final = outputs[-1] if outputs else ""
    if not final.strip():
        _write_extractive(res, attachment, chunks, calls, "Extractive overview: the chat model wrote an empty "
                          "overview, so the leading sentences of each part of the document stand in for it.")
        return True
    note = (f"The overview stops at its size limit ({s.chat_overview_tokens} tokens)." if truncated else None)
    with res.uow() as conn:
        _lock_step(conn, attachment, "summarizing", len(outputs))
        repo.mark_indexed(conn, attachment.id, final, kind="model", note=note)
    return True


def _write_extractive(res: ChatResources, attachment: Attachment, chunks: list[str], calls: list[overview.Call],
                      note: str) -> None:
    text = overview.extractive(overview.window_texts(chunks, calls), budget_tokens=res.settings.chat_overview_tokens,
                               tokens=res.tokens())
    with res.uow() as conn:
        current = repo.attachment_by_id(conn, attachment.id, for_update=True)
        if current is None or not current.is_current(attachment.attempt) or current.status != "summarizing":
            raise StaleAttachment(str(attachment.id))
        repo.mark_indexed(conn, attachment.id, text, kind="extractive", note=note)


def on_dead_job(res: ChatResources, job: AttachmentJob) -> None:
    """The job failed every delivery. An attachment whose chunks are all stored gets the extractive
    overview (nothing the user attached is lost to a failing model); any other becomes failed with
    what its last delivery met."""
    with res.uow() as conn:
        attachment = repo.attachment_by_id(conn, job.attachment_id)
    if attachment is None or not attachment.is_current(job.attempt):
        return
    if attachment.status == "summarizing":
        with res.uow() as conn:
            chunks = chunk_store.chunk_texts(conn, attachment.id)
        s = res.settings
        calls = overview.plan(len(chunks), window=s.chat_overview_window_chunks, fan_in=s.chat_overview_fan_in,
                              large=attachment.tier == "large")
        try:
            _write_extractive(res, attachment, chunks, calls, "Extractive overview: the chat model kept failing, "
                              "so the leading sentences of each part of the document stand in for a written "
                              "overview.")
            return
        except StaleAttachment:
            return
    _fail(res, job, attachment.last_failure or "The attachment could not be indexed: its work failed every "
                                                 "delivery - attach the file again; the worker log has the full "
                                                 "error.")
