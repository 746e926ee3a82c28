"""Parse stage: S3 events under rag/, incoming/ and inbox/ (and retry jobs) from the ingest queue."""

from __future__ import annotations

import dataclasses
from typing import Any

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.config.functions import ParseFunction
from sluice.ingest.events import read_message
from sluice.ingest.routing import on_ingest_item
from sluice.observability import sqs_handler
from sluice.wiring import stage_context


def record_handler(record: SQSRecord, lambda_context: Any = None) -> None:
    # One deadline for a parse (issue 37) comes from what this invocation has left.
    ctx = stage_context()
    if lambda_context is not None:
        ctx = dataclasses.replace(ctx, time_left_ms=lambda_context.get_remaining_time_in_millis)
    for item in read_message(record.body):
        on_ingest_item(ctx, item)


handler = sqs_handler(record_handler, settings=ParseFunction)
