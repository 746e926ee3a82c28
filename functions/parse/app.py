"""Parse stage: S3 events under rag/, incoming/ and inbox/ (and retry jobs) from the ingest queue."""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.config.functions import ParseFunction
from sluice.ingest.events import read_message
from sluice.ingest.routing import on_ingest_item
from sluice.observability import sqs_handler
from sluice.wiring import stage_context


def record_handler(record: SQSRecord) -> None:
    for item in read_message(record.body):
        on_ingest_item(stage_context(), item)


handler = sqs_handler(record_handler, settings=ParseFunction)
