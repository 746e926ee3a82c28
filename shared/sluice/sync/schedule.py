"""Scheduled runs: a source's ``schedule`` is a ``rate(...)`` expression, and one scheduled function
(every five minutes, an EventBridge Scheduler schedule in template.yaml; the local runtime fires it
on its rate) starts the runs that are due.

One schedule for the deployment rather than a schedule per source:
sources are rows, created and changed through the API, and a schedule per row would be
infrastructure created at runtime. A run is due when its period has passed since the
source's last run (of any trigger: a run started by hand resets the clock), or since the
source was created.
"""

from __future__ import annotations

import logging
import re
import uuid
from datetime import UTC, datetime, timedelta

from sluice.config import Settings
from sluice.db import sync_runs as runs
from sluice.db import sync_sources as sources
from sluice.errors import SluiceError, UnprocessableError
from sluice.sync.context import SyncContext

log = logging.getLogger("sluice.sync")

_RATE = re.compile(r"rate\((\d{1,6})\s+(minute|minutes|hour|hours|day|days)\)")
_UNIT = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1)}


def schedule_period(expression: str) -> timedelta:
    m = _RATE.fullmatch(expression.strip())
    if m is None:
        raise ValueError(expression)
    return int(m.group(1)) * _UNIT[m.group(2).rstrip("s")]


def checked_schedule(expression: str | None, settings: Settings) -> str | None:
    """The schedule as stored, or a 422 naming ``schedule``."""
    if expression is None:
        return None
    try:
        period = schedule_period(expression)
    except ValueError:
        raise UnprocessableError("The schedule is not a rate expression", fields={
            "schedule": "Write a rate such as rate(1 day), rate(6 hours) or rate(30 minutes)."}) from None
    least = timedelta(minutes=settings.sync_min_schedule_minutes)
    if period < least:
        raise UnprocessableError("The schedule is too frequent", fields={
            "schedule": f"A source runs at most every {settings.sync_min_schedule_minutes} minutes."})
    return expression.strip()


def due(last_run: datetime | None, created: datetime | None, period: timedelta, now: datetime) -> bool:
    since = last_run or created or now
    return since + period <= now


def start_due_runs(ctx: SyncContext, now: datetime | None = None) -> list[uuid.UUID]:
    """Start a run of every scheduled source whose period has passed; returns the runs started."""
    from sluice.sync.runs import start_for_source

    now = now or datetime.now(UTC)
    started: list[uuid.UUID] = []
    with ctx.uow() as conn:
        scheduled = sources.scheduled(conn)
        last = {s.id: runs.latest_for_source(conn, s.id) for s in scheduled}
    for source in scheduled:
        try:
            period = schedule_period(source.schedule or "")
        except ValueError:
            log.warning("a source's schedule is not a rate; skipped", extra={"source_id": str(source.id)})
            continue
        previous = last[source.id]
        if previous is not None and previous.active:
            continue
        if not due(previous.created_at if previous else None, source.created_at, period, now):
            continue
        try:
            run = start_for_source(ctx, source.id, trigger="schedule", started_by="schedule")
        except SluiceError as exc:
            log.info("a scheduled run was not started", extra={"source_id": str(source.id), "why": exc.code})
            continue
        started.append(run.id)
    return started
