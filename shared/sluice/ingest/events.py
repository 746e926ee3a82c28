"""What a stage queue message means: an S3 notification, S3's test event, or a direct job; and
the messages Sluice sends itself, in the same shapes.

Keys in S3 notifications are URL-encoded (``+`` for a space), as on AWS.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus, unquote_plus


@dataclass(frozen=True)
class ObjectEvent:
    key: str
    created: bool
    etag: str | None
    size: int | None
    sequencer: str | None


@dataclass(frozen=True)
class ParseJob:
    """A direct request to (re)parse a stored document, e.g. from a retry."""

    document_id: uuid.UUID
    attempt: int

    def message(self) -> dict[str, Any]:
        return {"document_id": str(self.document_id), "attempt": self.attempt}


def object_created_message(key: str) -> dict[str, Any]:
    """The notification S3 sends when ``key`` is written: what re-runs the stage that reads it."""
    return {"Records": [{"eventSource": "aws:s3", "eventName": "ObjectCreated:Put",
                         "s3": {"object": {"key": quote_plus(key)}}}]}


def read_message(body: str) -> list[ObjectEvent | ParseJob]:
    message: dict[str, Any] = json.loads(body)
    if message.get("Event") == "s3:TestEvent":
        return []  # sent once when notifications are configured; carries no object
    if "document_id" in message:
        return [ParseJob(uuid.UUID(message["document_id"]), int(message["attempt"]))]
    out: list[ObjectEvent | ParseJob] = []
    for record in message.get("Records", []):
        obj = record["s3"]["object"]
        out.append(
            ObjectEvent(
                key=unquote_plus(obj["key"]),
                created=record["eventName"].startswith("ObjectCreated"),
                etag=obj.get("eTag"),
                size=obj.get("size"),
                sequencer=obj.get("sequencer"),
            )
        )
    return out
