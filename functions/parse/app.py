"""Parse stage: S3 events under rag/ and inbox/ (and direct parse jobs) from the ingest queue."""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.ingest import stages
from sluice.ingest.events import read_message
from sluice.observability import sqs_handler
from sluice.wiring import stage_context


def record_handler(record: SQSRecord) -> None:
    ctx = stage_context()
    for item in read_message(record.body):
        stages.on_ingest_item(ctx, item)


handler = sqs_handler(record_handler)
