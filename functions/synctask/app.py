"""Sync run tasks: every step of infra/statemachines/sync.asl.json, named by the event's ``task``."""

from __future__ import annotations

from typing import Any

from sluice.config.functions import SyncTaskFunction
from sluice.observability import plain_handler
from sluice.sync.tasks import run_task
from sluice.wiring import sync_context


def work(event: dict[str, Any]) -> dict[str, Any]:
    return run_task(sync_context(), event)


handler = plain_handler(work, settings=SyncTaskFunction)
