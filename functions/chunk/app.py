"""Chunk stage: S3 ObjectCreated for a stage artifact, from the chunk queue."""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.ingest import stages
from sluice.ingest.events import ObjectEvent, read_message
from sluice.observability import sqs_handler
from sluice.wiring import stage_context


def record_handler(record: SQSRecord) -> None:
    for item in read_message(record.body):
        if isinstance(item, ObjectEvent) and item.created:
            stages.on_stage_artifact(stage_context(), item.key)


handler = sqs_handler(record_handler)
