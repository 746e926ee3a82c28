"""What a message on the chat queue means, and its dead letters: an attachment's job (its own, or a
continuation). Presigned chat uploads arrive on a queue of their own (sluice.chat.arrivals): their
check needs the parsing libraries, this work the model, and no function carries both (Lambda's
250 MB unzipped, docs/operations/deploying.md "Layers per need")."""

from __future__ import annotations

import json
import logging
from typing import Any

from sluice.chat.attachments import JOB_KEY, AttachmentJob, TimeLeft, on_dead_job, run_job
from sluice.chat.resources import ChatResources

log = logging.getLogger("sluice.chat")


def _job(body: str) -> AttachmentJob | None:
    message: dict[str, Any] = json.loads(body)
    if isinstance(message, dict) and JOB_KEY in message:
        return AttachmentJob.from_message(message)
    log.warning("ignoring a chat queue message that is not an attachment job",
                extra={"keys": sorted(message)[:5] if isinstance(message, dict) else None})
    return None


def on_message(res: ChatResources, body: str, time_left: TimeLeft) -> None:
    job = _job(body)
    if job is not None:
        run_job(res, job, time_left)


def on_dead_letter(res: ChatResources, body: str) -> None:
    job = _job(body)
    if job is not None:
        on_dead_job(res, job)
