"""The SQS adapter for messages Sluice sends itself (a retry's parse job, the reaper's re-drive)
rather than S3."""

from __future__ import annotations

import json
from typing import Any


class JobQueue:
    def __init__(self, sqs_client: Any, queue_url: str) -> None:
        self._sqs = sqs_client
        self.queue_url = queue_url

    def send(self, message: dict[str, Any]) -> None:
        self._sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(message))

    def waiting(self) -> int:
        """Messages in the queue no consumer has taken yet (SQS's approximate count)."""
        attrs = self._sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessages"])
        return int(attrs["Attributes"]["ApproximateNumberOfMessages"])
