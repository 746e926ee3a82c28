"""The hourly sweep (R-TD-2): a reservation whose teardown has made no progress for an hour —
its workflow never started (lost between the commit and the start), failed for good, or stalled
— is started again, and its receipt says why. Every step is idempotent, so starting again is
always safe; a teardown therefore never stays reserved across two sweeps without its receipt
saying what the sweep found.

``clock`` is the sweep's idea of now: tests move it forward instead of waiting an hour.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sluice.db import teardowns as td_repo
from sluice.db.connection import UnitOfWork
from sluice.teardown.context import Workflow
from sluice.teardown.request import start_workflow


def _now() -> datetime:
    return datetime.now(UTC)


clock: Callable[[], datetime] = _now


def restart_stalled(uow: UnitOfWork, workflow: Workflow | None, *, older_than: timedelta,
          now: datetime | None = None) -> list[uuid.UUID]:
    """Start again every reservation with no progress for ``older_than``; returns their ids."""
    at = now or clock()
    with uow() as conn:
        stalled = td_repo.stalled(conn, at - older_than)
        for td in stalled:
            last = td.updated_at.isoformat() if td.updated_at else "its request"
            why = (f"The hourly sweep started it again: no progress since {last} "
                   f"({td.state} at the {td.failed_step or td.step} step).")
            td_repo.update(conn, td.id, state="running", event={"at": at.isoformat(), "event": "restarted",
                                                                "reason": why})
    restarted = []
    for td in stalled:
        with uow() as conn:
            current = td_repo.get(conn, td.id)
        if current is not None and not current.released:
            start_workflow(uow, workflow, current)
            restarted.append(td.id)
    return restarted
