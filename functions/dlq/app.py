"""Dead letters of the three stage queues: the document whose message ran out of deliveries
becomes ``error`` with a summary naming its stage (R-PARSE-5, R-DOC-4)."""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.config import current
from sluice.config.functions import DeadLetterFunction
from sluice.ingest.dead_letters import on_dead_letter
from sluice.ingest.events import read_message
from sluice.observability import sqs_handler
from sluice.wiring import stage_context


def _stage_of(queue_arn: str) -> str:
    """Which stage a dead-letter queue belongs to, by the ARN the template hands over."""
    s = current(DeadLetterFunction)
    return {s.ingest_dlq_arn: "parsing", s.chunk_dlq_arn: "chunking", s.embed_dlq_arn: "embedding"}.get(
        queue_arn, "processing")


def record_handler(record: SQSRecord) -> None:
    stage = _stage_of(record.event_source_arn)
    for item in read_message(record.body):
        on_dead_letter(stage_context(), stage, item)


handler = sqs_handler(record_handler, settings=DeadLetterFunction)
