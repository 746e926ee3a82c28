"""Chunk stage: S3 ObjectCreated for a stage artifact, from the chunk queue."""

from __future__ import annotations

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.ingest import stages
from sluice.ingest.events import ObjectEvent, read_message
from sluice.observability import logger, metrics, tracer
from sluice.wiring import stage_context

processor = BatchProcessor(event_type=EventType.SQS)


def record_handler(record: SQSRecord) -> None:
    for item in read_message(record.body):
        if isinstance(item, ObjectEvent) and item.created:
            stages.on_stage_artifact(stage_context(), item.key)


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event, context):
    return process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                    context=context)
