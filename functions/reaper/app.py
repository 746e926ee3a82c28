"""The reaper, on a schedule: documents processing with no progress for longer than any stage could
take are resumed once from their last saved step, then failed with a sentence (issue 17); chat
attachments the same on the chat queue, and presigned chat uploads that never arrived fail (issue 16);
and old sync runs' file lists expire (issue 26)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from sluice.chat import recovery as chat_recovery
from sluice.config import current
from sluice.config.functions import ReaperFunction
from sluice.db.connection import transaction
from sluice.ingest.recovery import reap
from sluice.observability import metrics, plain_handler
from sluice.sync.retention import expire_run_files
from sluice.wiring import chat_queue_backlog, chat_resources, stage_context, stage_queues


def sweep(event: dict[str, Any]) -> dict[str, int]:
    reaped = asdict(reap(stage_context(), stage_queues()))
    # Any non-zero count means messages were lost between stages: worth an alarm.
    for name, value in reaped.items():
        metrics.add_metric(name=f"StalledDocuments{name.capitalize()}", unit=MetricUnit.Count, value=value)
    chat = asdict(chat_recovery.reap(chat_resources(), backlog=chat_queue_backlog))
    for name, value in chat.items():
        metrics.add_metric(name=f"StalledChat{name.title().replace('_', '')}", unit=MetricUnit.Count, value=value)
    expired = expire_run_files(transaction, current(ReaperFunction))
    return {**reaped, **{f"chat_{name}": value for name, value in chat.items()}, "sync_runs_expired": expired}


handler = plain_handler(sweep, settings=ReaperFunction)
