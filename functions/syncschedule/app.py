"""Scheduled syncs: every five minutes, start the runs of the sources whose schedule is due."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sluice.config import DATABASE
from sluice.observability import logger, plain_handler
from sluice.sync.schedule import start_due_runs
from sluice.wiring import sync_context


def work(event: dict[str, Any]) -> dict[str, Any]:
    # The event's time is when the schedule fired (EventBridge sets it); a late delivery decides as of then.
    when = event.get("time")
    now = datetime.fromisoformat(str(when).replace("Z", "+00:00")) if when else datetime.now(UTC)
    started = start_due_runs(sync_context(), now)
    logger.info("scheduled runs started", extra={"started": len(started)})
    return {"started": [str(r) for r in started]}


handler = plain_handler(work, requires=(DATABASE, "SYNC_STATE_MACHINE_ARN"))
