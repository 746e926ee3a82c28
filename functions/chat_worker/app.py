"""The chat queue's worker: attachment jobs (grade, index, summarise, in steps that resume) and their
dead letters (R-CHAT-2). It carries the model and not the parsing libraries: the attachment's text was
extracted when its file was uploaded (functions/chat_files, functions/chat_arrival)."""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sluice.chat.worker import on_dead_letter, on_message
from sluice.config import current
from sluice.config.functions import ChatWorkerFunction
from sluice.observability import sqs_handler
from sluice.wiring import chat_resources

# Without a Lambda context (a direct call), a job may run this long before it continues itself.
_NO_CONTEXT_SECONDS = 600.0


def record_handler(record: SQSRecord, lambda_context: Any = None) -> None:
    deadline = time.monotonic() + _NO_CONTEXT_SECONDS

    def time_left() -> float:
        if lambda_context is None:
            return deadline - time.monotonic()
        return float(lambda_context.get_remaining_time_in_millis()) / 1000

    if record.event_source_arn == current(ChatWorkerFunction).chat_dlq_arn:
        on_dead_letter(chat_resources(), record.body)
    else:
        on_message(chat_resources(), record.body, time_left)


handler = sqs_handler(record_handler, settings=ChatWorkerFunction)
