"""The hourly teardown sweep (R-TD-2): reservations with no progress for an hour start again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sluice import teardown
from sluice.config import current
from sluice.config.functions import TeardownSweepFunction
from sluice.db.connection import transaction
from sluice.observability import plain_handler
from sluice.wiring import teardown_workflow


def run(event: dict[str, Any]) -> dict[str, Any]:
    older_than = timedelta(seconds=current(TeardownSweepFunction).teardown_sweep_after_seconds)
    restarted = teardown.restart_stalled(transaction, teardown_workflow(), older_than=older_than)
    return {"restarted": [str(i) for i in restarted]}


handler = plain_handler(run, settings=TeardownSweepFunction)
