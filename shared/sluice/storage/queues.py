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

    def send_all(self, messages: list[dict[str, Any]]) -> None:
        """One message each, ten to a call (SendMessageBatch's most), in the order given."""
        for start in range(0, len(messages), 10):
            batch = messages[start:start + 10]
            resp = self._sqs.send_message_batch(QueueUrl=self.queue_url, Entries=[
                {"Id": str(i), "MessageBody": json.dumps(m)} for i, m in enumerate(batch)])
            if resp.get("Failed"):
                raise RuntimeError(f"{len(resp['Failed'])} of {len(batch)} messages were not queued")

    def waiting(self) -> int:
        """Messages in the queue no consumer has taken yet (SQS's approximate count)."""
        attrs = self._sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessages"])
        return int(attrs["Attributes"]["ApproximateNumberOfMessages"])
