"""The chat arrival queue: presigned chat uploads landing under chat-incoming/, checked (validated,
classified, parsed) and stored as a direct upload is; and that queue's dead letters, which fail the
pending file with a sentence (R-CHAT-1). This function carries the parsing libraries and not the
model (docs/operations/deploying.md)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.chat.arrivals import on_dead_letter, on_message
from sluice.config import current
from sluice.config.functions import ChatArrivalFunction
from sluice.observability import sqs_handler
from sluice.wiring import chat_resources


def record_handler(record: SQSRecord, lambda_context: Any = None) -> None:
    if record.event_source_arn == current(ChatArrivalFunction).chat_arrival_dlq_arn:
        on_dead_letter(chat_resources(), record.body)
    else:
        on_message(chat_resources(), record.body)


handler = sqs_handler(record_handler, settings=ChatArrivalFunction)
