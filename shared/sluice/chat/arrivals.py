"""Presigned chat uploads arriving under ``chat-incoming/``: the S3 events of the chat arrival queue,
and that queue's dead letters (R-CHAT-1, R-UP-1..7).

An arrival is checked exactly as a direct upload is (validate, classify, parse), so its function
carries the parsing libraries and nothing of the model; attachment work stays on the chat queue
(sluice.chat.worker), whose function carries the model and nothing of the parsers.
"""

from __future__ import annotations

import logging

from sluice.chat.files import fail_arrival, on_arrival
from sluice.chat.resources import ChatResources
from sluice.ingest.events import ObjectEvent, read_message

log = logging.getLogger("sluice.chat")

ARRIVAL_PREFIX = "chat-incoming/"
ARRIVAL_FAILED = ("The upload could not be checked: it failed every attempt. Upload the file again; the "
                  "worker log has the full error.")


def _arrivals(body: str) -> list[str]:
    """The keys of the chat uploads a message says were created (an S3 test event names none)."""
    keys: list[str] = []
    for item in read_message(body):
        if isinstance(item, ObjectEvent) and item.created and item.key.startswith(ARRIVAL_PREFIX):
            keys.append(item.key)
        else:
            log.warning("ignoring a message on the chat arrival queue",
                        extra={"key_prefix": item.key.split("/")[0] if isinstance(item, ObjectEvent) else None})
    return keys


def on_message(res: ChatResources, body: str) -> None:
    for key in _arrivals(body):
        on_arrival(res, key)


def on_dead_letter(res: ChatResources, body: str) -> None:
    """An arrival that failed every delivery: its row fails with a sentence, the arrival is not kept."""
    for key in _arrivals(body):
        fail_arrival(res, key, ARRIVAL_FAILED)
