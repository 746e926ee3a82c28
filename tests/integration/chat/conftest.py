"""Chat services against the real embedded PostgreSQL and a moto S3; the queue is a list the test
delivers from, so a test decides when a job runs, runs it twice, or stops it half way."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from sluice.chat import arrivals, worker
from sluice.chat.attachments import JOB_KEY
from sluice.chat.resources import ATTACHMENT_EMBEDDING, ChatResources
from sluice.config import get_settings
from sluice.db.connection import transaction
from sluice.embedding.tokens import bundled_token_counter
from sluice.identity import Principal
from sluice.ingest.uploads import Intake
from sluice.llm import ChatModel
from tests.integration.moto_bucket import Bucket

ALICE = Principal(user_id="alice", org_id=None, permissions=frozenset(), is_app_admin=False)
MALLORY = Principal(user_id="mallory", org_id=None, permissions=frozenset(), is_app_admin=False)


def local_embedder():
    from sluice.embedding import build_embedder

    return build_embedder(ATTACHMENT_EMBEDDING)


@dataclass
class ChatHarness:
    res: ChatResources
    moto: Bucket
    jobs: list[dict[str, Any]] = field(default_factory=list)
    model: ChatModel | None = None

    def settings(self, **changes: Any) -> None:
        self.res.settings = self.res.settings.model_copy(update=changes)

    def run_jobs(self, time_left: Callable[[], float] = lambda: 1e9, limit: int = 1000) -> int:
        """Deliver queued messages (and the continuations they send) until none is left: an attachment
        job as the chat queue's worker takes it, an S3 event as the chat arrival queue's function does."""
        delivered = 0
        while self.jobs and delivered < limit:
            message = self.jobs.pop(0)
            if JOB_KEY in message:
                worker.on_message(self.res, json.dumps(message), time_left)
            else:
                arrivals.on_message(self.res, json.dumps(message))
            delivered += 1
        return delivered

    def dead_letter(self, message: dict[str, Any]) -> None:
        if JOB_KEY in message:
            worker.on_dead_letter(self.res, json.dumps(message))
        else:
            arrivals.on_dead_letter(self.res, json.dumps(message))

    def keys(self, prefix: str) -> list[str]:
        return self.moto.keys(prefix)

    def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        with transaction() as conn:
            return conn.execute(sql, params).fetchall()

    def chunk_count(self, attachment_id: uuid.UUID | str | None = None) -> int:
        if attachment_id is None:
            return int(self.rows("SELECT count(*) AS n FROM chat_attachment_chunks")[0]["n"])
        return int(self.rows("SELECT count(*) AS n FROM chat_attachment_chunks WHERE attachment_id = %s",
                             uuid.UUID(str(attachment_id)))[0]["n"])


@pytest.fixture
def chat(db_url, bucket: Bucket) -> ChatHarness:
    settings = get_settings().model_copy(update={"embed_batch_size": 16})
    harness: ChatHarness

    def intake() -> Intake:
        return Intake(uow=transaction, store=bucket.store, settings=harness.res.settings)

    res = ChatResources(uow=transaction, store=bucket.store, settings=settings, embedder=local_embedder,
                        tokens=bundled_token_counter, chat_model=lambda: harness.model,
                        send_job=lambda message: harness.jobs.append(message), intake=intake)
    harness = ChatHarness(res, bucket)
    return harness


def words(n: int, topic: str = "harbour") -> str:
    """``n`` words of plain prose, in sentences, about ``topic``."""
    base = (f"The {topic} committee met on a grey morning to review the quarterly figures and the state of "
            "the eastern pier, which had settled after the winter storms").split()
    out: list[str] = []
    i = 0
    while len(out) < n:
        out.append(base[i % len(base)])
        i += 1
        if i % len(base) == 0:
            out[-1] += "."
    return " ".join(out) + "."
