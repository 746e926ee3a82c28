"""Embed stage: S3 ObjectCreated for a chunks artifact, from the embed queue."""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.config.functions import EmbedFunction
from sluice.ingest.events import read_message
from sluice.ingest.routing import on_stage_artifact
from sluice.observability import sqs_handler
from sluice.wiring import stage_context


def record_handler(record: SQSRecord) -> None:
    for item in read_message(record.body):
        on_stage_artifact(stage_context(), item)


handler = sqs_handler(record_handler, settings=EmbedFunction)
