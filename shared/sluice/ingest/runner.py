"""What every pipeline stage shares: its context, the claim on a document's row, and the one
try/except that turns a failure into a row's error or a redelivery.

Each stage reads the tracking row first and drops an event whose attempt is
stale or whose row is gone (R-DOC-7). A failure no redelivery can cure (a
refusal Sluice raised) fails the row at once with its summary (R-DOC-4). Any
other failure records the summary in ``last_failure`` and raises, so the queue
delivers again; after the last delivery the dead-letter handler turns that
summary into the row's error (R-PARSE-5).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sluice import jobs
from sluice.access.vision import ImageDescriptionChoice
from sluice.config import StageSettings
from sluice.db import documents as doc_repo
from sluice.db.connection import UnitOfWork
from sluice.db.documents import Document
from sluice.embedding import Embedder, EmbeddingSpec
from sluice.ingest.failures import failure_summary, is_refusal
from sluice.llm import ChatModel
from sluice.parsing import ParseBudget
from sluice.storage import ObjectStore, content_key, stage_key

log = logging.getLogger("sluice.ingest")


@dataclass
class StageContext:
    """What every stage needs, built once per cold start by the composition root."""

    uow: UnitOfWork
    store: ObjectStore
    settings: StageSettings
    embedder_for: Callable[[EmbeddingSpec], Embedder]
    # A collection's vision model (R-PARSE-6), for the describe step; None where none can be built.
    vision_model_for: Callable[[ImageDescriptionChoice], ChatModel] | None = None
    # The milliseconds the invocation has left (the Lambda context's get_remaining_time_in_millis), set
    # per invocation by the parse function; None (the local runtime): only the children's own limits.
    time_left_ms: Callable[[], int] | None = None

    @property
    def budget(self) -> ParseBudget:
        return ParseBudget.from_settings(self.settings)


class StaleEvent(Exception):
    """The event belongs to an attempt that is no longer current; it changes nothing."""


class StepFailed(Exception):
    """A failure inside a named step of a stage (``step``): summarised as that step, not the stage."""

    def __init__(self, step: str, cause: Exception) -> None:
        super().__init__(step)
        self.step = step
        self.cause = cause


@contextmanager
def step(name: str) -> Iterator[None]:
    """Name what the block does, so its failure's summary and log say that step."""
    try:
        yield
    except StaleEvent:
        raise
    except Exception as exc:
        raise StepFailed(name, exc) from exc


def claim(ctx: StageContext, doc_id: uuid.UUID, attempt: int | None, stage: str) -> Document:
    """Claim the row for a stage: it must exist, be processing, and be on this attempt.

    A row that is gone was deleted while its document was indexing: an earlier
    stage may have written the parsed text and this attempt's artifacts after the
    delete (or its teardown) removed what was there, so the stage that finds the
    row gone removes them (R-DOC-6, R-TD-1): no object outlives its row.
    """
    with ctx.uow() as conn:
        doc = doc_repo.get(conn, doc_id, for_update=True)
        if doc is not None and doc.is_current(attempt):
            doc_repo.update(conn, doc_id, stage=stage, progress_done=None, progress_total=None)
            return doc
    if doc is None:
        stages = ("parsed", "chunks", "images")
        artifacts = [stage_key(s, doc_id, attempt) for s in stages] if attempt is not None else []
        ctx.store.delete_many([content_key(doc_id), *artifacts])
    raise StaleEvent(str(doc_id))


def fail_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int | None, stage: str,
                  exc: BaseException, *, file_gone: bool = False) -> None:
    """Mark the row ``error`` with the R-DOC-4 summary; the log keeps the exception. ``file_gone``: no
    stored original is left to retry from (``doc_repo.mark_failed``)."""
    log.warning("document failed", exc_info=None if is_refusal(exc) else exc,
                extra={"document_id": str(doc_id), "stage": stage, "error_type": type(exc).__name__})
    with ctx.uow() as conn:
        doc_repo.mark_failed(conn, doc_id, failure_summary(stage, exc), stage=stage, expect_attempt=attempt,
                             file_gone=file_gone)


def note_failed_delivery(ctx: StageContext, doc_id: uuid.UUID, attempt: int, stage: str,
                         exc: BaseException) -> None:
    """Keep what this delivery met for the dead-letter handler; the queue will deliver again."""
    log.warning("stage delivery failed; the queue will retry it", exc_info=exc,
                extra={"document_id": str(doc_id), "stage": stage, "error_type": type(exc).__name__})
    try:
        with ctx.uow() as conn:
            doc_repo.update(conn, doc_id, expect_attempt=attempt, last_failure=failure_summary(stage, exc))
    except Exception:
        log.exception("could not record a failed delivery", extra={"document_id": str(doc_id)})


def run_stage(ctx: StageContext, doc_id: uuid.UUID, attempt: int, stage: str, work: Callable[[Document], None],
              *, is_final: Callable[[BaseException], bool] = is_refusal,
              discards_file: Callable[[Document, BaseException], bool] | None = None) -> None:
    """Claim the row, do ``work`` on it, and settle what went wrong: the skeleton of every stage.

    A stale event does nothing. A final failure (``is_final``) fails the row now;
    one that ``discards_file`` says leaves no stored original (it is missing, or
    refused and not kept) deletes the object and the row stops naming it, so
    ``has_file`` and a retry agree (R-DOC-5). Any other failure records the
    summary and raises for the queue to deliver again.
    """
    def claimed() -> Document | None:
        try:
            return claim(ctx, doc_id, attempt, stage)
        except StaleEvent:
            return None

    def unwrapped(raised: BaseException) -> tuple[str, BaseException]:
        return (raised.step, raised.cause) if isinstance(raised, StepFailed) else (stage, raised)

    def fail(doc: Document, raised: BaseException) -> None:
        where, exc = unwrapped(raised)
        gone = discards_file is not None and discards_file(doc, exc)
        if gone and doc.storage_path:
            # The object first: a failed delete leaves the row processing for the queue to deliver
            # again, never an object no row names (a teardown finds objects through their rows).
            ctx.store.delete(doc.storage_path)
        fail_document(ctx, doc_id, attempt, where, exc, file_gone=gone)

    def retry_later(doc: Document, raised: BaseException) -> None:
        where, exc = unwrapped(raised)
        note_failed_delivery(ctx, doc_id, attempt, where, exc)
        raise exc from None

    jobs.run(claimed, work, is_final=lambda raised: is_final(unwrapped(raised)[1]), fail=fail,
             retry_later=retry_later, stale=(StaleEvent,))
