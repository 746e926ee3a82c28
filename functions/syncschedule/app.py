"""Scheduled syncs. Every five minutes (the schedule): hand out one message per source whose schedule
is due, tenants taking turns. Each message (the queue): start that source's run if it is still due."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.config.functions import SyncSchedulePlan, SyncScheduleStart
from sluice.observability import logger, plain_handler, sqs_handler
from sluice.sync.runs import queue_due_runs, start_if_due
from sluice.wiring import sync_context


def plan(event: dict[str, Any]) -> dict[str, Any]:
    # The event's time is when the schedule fired (EventBridge sets it); a late delivery decides as of then.
    when = event.get("time")
    now = datetime.fromisoformat(str(when).replace("Z", "+00:00")) if when else datetime.now(UTC)
    queued = queue_due_runs(sync_context(), now)
    logger.info("due sync runs handed out", extra={"queued": len(queued)})
    return {"queued": [str(s) for s in queued]}


def start(record: SQSRecord) -> None:
    start_if_due(sync_context(), record.json_body)


_plan = plain_handler(plan, settings=SyncSchedulePlan)
_start = sqs_handler(start, settings=SyncScheduleStart)


def handler(event: dict[str, Any], context: Any) -> Any:
    return (_start if "Records" in event else _plan)(event, context)
