"""Scheduled runs, the pure rules: a source's ``schedule`` is a ``rate(...)`` expression; when a run
is due; which tenant a source runs for; and the order due runs are handed out in.

One scheduled function (every five minutes, an EventBridge Scheduler schedule in template.yaml; the
local runtime fires it on its rate) finds the due sources and hands each out as one message
(``sluice.sync.runs.queue_due_runs``); the same function, fed by that queue, starts each run
(``start_if_due``). One schedule for the deployment rather than a schedule per source: sources are
rows, created and changed through the API, and a schedule per row would be infrastructure created
at runtime. A run is due when its period has passed since the source's last run (of any trigger: a
run started by hand resets the clock), or since the source was created.

Due runs are handed out taking turns across tenants (round robin, each tenant's own longest-due
first), so one tenant's hundred schedules cannot keep another tenant's one waiting behind them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TypeVar

from sluice.config import SyncSettings
from sluice.errors import UnprocessableError

T = TypeVar("T")

_RATE = re.compile(r"rate\((\d{1,6})\s+(minute|minutes|hour|hours|day|days)\)")
_UNIT = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1)}


def schedule_period(expression: str) -> timedelta:
    m = _RATE.fullmatch(expression.strip())
    if m is None:
        raise ValueError(expression)
    return int(m.group(1)) * _UNIT[m.group(2).rstrip("s")]


def checked_schedule(expression: str | None, settings: SyncSettings) -> str | None:
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


def due_at(last_run: datetime | None, created: datetime | None, period: timedelta, now: datetime) -> datetime:
    """When the next run is due: a period after the last run, or after the source was created."""
    return (last_run or created or now) + period


def due(last_run: datetime | None, created: datetime | None, period: timedelta, now: datetime) -> bool:
    return due_at(last_run, created, period, now) <= now


def tenant_of(scope: str, org_id: str | None, owner_id: str | None) -> str:
    """Whose a base's runs are: its organization, its owner for a personal base, or the app."""
    if scope == "org" and org_id:
        return f"org:{org_id}"
    if scope == "personal" and owner_id:
        return f"user:{owner_id}"
    return "app"


def fair_order(items: Sequence[T], *, tenant: Callable[[T], str]) -> list[T]:
    """``items`` taking turns across tenants: the first of each tenant, then the second of each...;
    tenants in the order they first appear, each tenant's own in the order given."""
    queues: dict[str, list[T]] = {}
    for item in items:
        queues.setdefault(tenant(item), []).append(item)
    ordered: list[T] = []
    turn = 0
    while len(ordered) < len(items):
        ordered += [q[turn] for q in queues.values() if turn < len(q)]
        turn += 1
    return ordered
