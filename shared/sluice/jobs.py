"""The one skeleton of a queued job: claim it, work on it, and settle what went wrong.

The pipeline's stages (``sluice.ingest.runner.run_stage``) and the chat worker's attachment jobs
(``sluice.chat.attachments.run_job``) both run through ``run``: a job that is no longer current does
nothing, a failure no redelivery can cure fails the job now, and any other is noted and raised so the
queue delivers the message again (after the last delivery, the dead-letter handler settles it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

J = TypeVar("J")


def run(claim: Callable[[], J | None], work: Callable[[J], None], *,
        is_final: Callable[[BaseException], bool],
        fail: Callable[[J, BaseException], None],
        retry_later: Callable[[J, BaseException], None],
        stale: tuple[type[BaseException], ...] = ()) -> None:
    """``claim`` the job (None: not current, nothing to do) and ``work`` on it.

    A ``stale`` exception from the work ends it quietly. A failure ``is_final`` calls final is
    ``fail``-ed and swallowed; any other is handed to ``retry_later`` (which may raise what the queue
    should see instead) and raised again.
    """
    job = claim()
    if job is None:
        return
    try:
        work(job)
    except stale:
        return
    except Exception as exc:
        if is_final(exc):
            fail(job, exc)
            return
        retry_later(job, exc)
        raise


def settle_stalled(*, redriven: bool, mark_redriven: Callable[[], bool], resend: Callable[[], None],
                   backlog: Callable[[], bool], fail: Callable[[], bool]) -> str:
    """One job the reaper found idle too long (a document's stage, an attachment's work): resumed once
    per attempt (``mark_redriven`` first, conditional on the row being as read, then ``resend``); idle
    again after that, it waits while its queue holds a ``backlog`` and otherwise ``fail``-s.

    Returns what happened: "redriven", "waiting", "failed", or "" (the row moved meanwhile).
    """
    if not redriven:
        if not mark_redriven():
            return ""
        resend()
        return "redriven"
    if backlog():
        return "waiting"
    return "failed" if fail() else ""
