"""Dead letters of the three stage queues: the document whose message ran out of deliveries
becomes ``error`` with a summary naming its stage (R-PARSE-5, R-DOC-4)."""

from __future__ import annotations

import os

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.ingest import stages
from sluice.ingest.events import read_message
from sluice.observability import sqs_handler
from sluice.wiring import stage_context

# Which stage each dead-letter queue belongs to, by the ARN the template hands over.
_STAGE_BY_QUEUE_ENV = {"INGEST_DLQ_ARN": "parsing", "CHUNK_DLQ_ARN": "chunking", "EMBED_DLQ_ARN": "embedding"}


def _stage_of(queue_arn: str) -> str:
    for env, stage in _STAGE_BY_QUEUE_ENV.items():
        if os.environ.get(env) == queue_arn:
            return stage
    return "processing"


def record_handler(record: SQSRecord) -> None:
    stage = _stage_of(record.event_source_arn)
    for item in read_message(record.body):
        stages.on_dead_letter(stage_context(), stage, item)


handler = sqs_handler(record_handler)
