"""Parse stage: S3 events under rag/ and inbox/ (and direct parse jobs) from the ingest queue."""

from __future__ import annotations

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.ingest import stages
from sluice.ingest.events import read_message
from sluice.observability import logger, metrics, tracer
from sluice.wiring import stage_context

processor = BatchProcessor(event_type=EventType.SQS)


def record_handler(record: SQSRecord) -> None:
    ctx = stage_context()
    for item in read_message(record.body):
        stages.on_ingest_item(ctx, item)


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event, context):
    return process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                    context=context)
