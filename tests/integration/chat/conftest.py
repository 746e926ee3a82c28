"""Chat services against the real embedded PostgreSQL and a moto S3; the queue is a list the test
delivers from, so a test decides when a job runs, runs it twice, or stops it half way."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
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
from sluice.storage import ObjectStore

ALICE = Principal(user_id="alice", org_id=None, permissions=frozenset(), is_app_admin=False)
MALLORY = Principal(user_id="mallory", org_id=None, permissions=frozenset(), is_app_admin=False)


def local_embedder():
    from sluice.embedding import build_embedder

    return build_embedder(ATTACHMENT_EMBEDDING)


@dataclass
class ChatHarness:
    res: ChatResources
    s3: Any
    bucket: str
    key_id: str
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
        listed = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=prefix)
        return [o["Key"] for o in listed.get("Contents", [])]

    def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        with transaction() as conn:
            return conn.execute(sql, params).fetchall()

    def chunk_count(self, attachment_id: uuid.UUID | str | None = None) -> int:
        if attachment_id is None:
            return int(self.rows("SELECT count(*) AS n FROM chat_attachment_chunks")[0]["n"])
        return int(self.rows("SELECT count(*) AS n FROM chat_attachment_chunks WHERE attachment_id = %s",
                             uuid.UUID(str(attachment_id)))[0]["n"])


@pytest.fixture
def chat(db_url, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatHarness]:
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        key_id = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["KeyId"]
        bucket = "sluice-chat-test"
        s3.create_bucket(Bucket=bucket)
        store = ObjectStore(s3, bucket, key_id)
        settings = get_settings().model_copy(update={"embed_batch_size": 16})
        harness: ChatHarness

        def intake() -> Intake:
            return Intake(uow=transaction, store=store, settings=harness.res.settings)

        res = ChatResources(uow=transaction, store=store, settings=settings, embedder=local_embedder,
                            tokens=bundled_token_counter, chat_model=lambda: harness.model,
                            send_job=lambda message: harness.jobs.append(message), intake=intake)
        harness = ChatHarness(res, s3, bucket, key_id)
        yield harness


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
