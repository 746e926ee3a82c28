"""Delivers SQS messages to their function with real SQS event payloads, as the Lambda
event source mapping does, honouring ``batchItemFailures``."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("sluice.local")

# A failed message is retried after this many seconds locally (AWS waits out the
# queue's visibility timeout); the queue's redrive policy still counts receives.
LOCAL_RETRY_DELAY = 1


class QueuePump:
    def __init__(self, sqs: Any, queue_url: str, queue_arn: str, batch_size: int,
                 deliver: Callable[[dict[str, Any]], dict[str, Any] | None], name: str) -> None:
        self.sqs = sqs
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self.batch_size = max(1, min(batch_size, 10))
        self.deliver = deliver
        self.name = name
        self.busy = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"pump-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def request_stop(self) -> None:
        """Take no further message; a batch being delivered finishes (see ``join``)."""
        self._stop.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout=timeout)

    def stop(self) -> None:
        self.request_stop()
        self.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once(wait_seconds=1)
            except Exception:
                if not self._stop.is_set():
                    log.exception("pump %s failed a poll", self.name)
                    self._stop.wait(0.5)

    def poll_once(self, wait_seconds: int = 0) -> int:
        resp = self.sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=self.batch_size, WaitTimeSeconds=wait_seconds,
            AttributeNames=["All"], MessageAttributeNames=["All"],
        )
        messages = resp.get("Messages", [])
        if not messages:
            return 0
        self.busy += 1
        try:
            self._deliver(messages)
        finally:
            self.busy -= 1
        return len(messages)

    def _deliver(self, messages: list[dict[str, Any]]) -> None:
        region = self.queue_arn.split(":")[3]
        records = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": m.get("MessageAttributes", {}),
                "md5OfBody": m.get("MD5OfBody") or hashlib.md5(m["Body"].encode()).hexdigest(),  # noqa: S324
                "eventSource": "aws:sqs",
                "eventSourceARN": self.queue_arn,
                "awsRegion": region,
            }
            for m in messages
        ]
        try:
            result = self.deliver({"Records": records}) or {}
            failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        except Exception:
            log.exception("function for %s raised; the whole batch is retried", self.name)
            failed = {m["MessageId"] for m in messages}
        for m in messages:
            if m["MessageId"] in failed:
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=LOCAL_RETRY_DELAY
                )
            else:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
