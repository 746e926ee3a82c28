"""What a message on the chat queue means, and its dead letters: an attachment's job (its own, or a
continuation), or an S3 event for a presigned chat upload that arrived under ``chat-incoming/``."""

from __future__ import annotations

import json
import logging
from typing import Any

from sluice.chat.attachments import JOB_KEY, AttachmentJob, TimeLeft, on_dead_job, run_job
from sluice.chat.files import fail_arrival, on_arrival
from sluice.chat.resources import ChatResources
from sluice.ingest.events import ObjectEvent, read_message

log = logging.getLogger("sluice.chat")

ARRIVAL_FAILED = ("The upload could not be checked: it failed every attempt. Upload the file again; the "
                  "worker log has the full error.")


def _items(body: str) -> list[AttachmentJob | ObjectEvent]:
    message: dict[str, Any] = json.loads(body)
    if JOB_KEY in message:
        return [AttachmentJob.from_message(message)]
    return [item for item in read_message(body) if isinstance(item, ObjectEvent)]


def on_message(res: ChatResources, body: str, time_left: TimeLeft) -> None:
    for item in _items(body):
        if isinstance(item, AttachmentJob):
            run_job(res, item, time_left)
        elif item.created and item.key.startswith("chat-incoming/"):
            on_arrival(res, item.key)
        else:
            log.warning("ignoring a chat queue object event", extra={"key_prefix": item.key.split("/")[0]})


def on_dead_letter(res: ChatResources, body: str) -> None:
    for item in _items(body):
        if isinstance(item, AttachmentJob):
            on_dead_job(res, item)
        elif item.created and item.key.startswith("chat-incoming/"):
            fail_arrival(res, item.key, ARRIVAL_FAILED)
