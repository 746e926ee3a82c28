"""Stage-level harness: the real stages against the real embedded PostgreSQL and a moto S3,
with a fake embedding provider (fakes are for the provider, never for the database)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from sluice.config import get_settings
from sluice.db import knowledge_bases as kb_repo
from sluice.db.connection import transaction
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.identity import Principal
from sluice.ingest.events import ObjectEvent
from sluice.ingest.routing import on_ingest_item, on_stage_artifact
from sluice.ingest.runner import StageContext
from sluice.ingest.uploads import DocumentFields, Intake, accept_direct_upload
from sluice.storage import ObjectStore, stage_key
from tests.fakes import DIM, FakeEmbedder

ALICE = Principal(user_id="alice", org_id=None, permissions=frozenset(), is_app_admin=False)


@dataclass
class Harness:
    ctx: StageContext
    embedder: FakeEmbedder
    kb: KnowledgeBase
    s3: Any
    bucket: str
    key_id: str
    delivered: list[tuple[str, Any]] = field(default_factory=list)

    def intake(self) -> Intake:
        """The upload side of the same context (its settings follow ctx.settings)."""
        return Intake(uow=self.ctx.uow, store=self.ctx.store, settings=self.ctx.settings)

    def upload(self, name: str, data: bytes, **fields: Any) -> uuid.UUID:
        accepted = accept_direct_upload(self.intake(), ALICE, str(self.kb.id),
                                        name, data, DocumentFields(**fields))
        return accepted.document.id

    # The messages each stage's queue would carry.
    def object_event(self, key: str, *, created: bool = True) -> ObjectEvent:
        head = self.ctx.store.head(key)
        return ObjectEvent(key=key, created=created, etag=head.etag if head else None,
                           size=head.size if head else None, sequencer=None)

    def parse_message(self, doc_id: uuid.UUID) -> tuple[str, Any]:
        from sluice.db import documents as doc_repo

        with transaction() as conn:
            doc = doc_repo.get(conn, doc_id)
        assert doc is not None and doc.storage_path
        return ("ingest", self.object_event(doc.storage_path))

    @staticmethod
    def chunk_message(doc_id: uuid.UUID, attempt: int = 1) -> tuple[str, Any]:
        return ("stage", stage_key("parsed", doc_id, attempt))

    @staticmethod
    def embed_message(doc_id: uuid.UUID, attempt: int = 1) -> tuple[str, Any]:
        return ("stage", stage_key("chunks", doc_id, attempt))

    def deliver(self, message: tuple[str, Any]) -> None:
        kind, body = message
        self.delivered.append(message)
        if kind == "ingest":
            on_ingest_item(self.ctx, body)
        else:
            on_stage_artifact(self.ctx, self.object_event(body))

    def run_pipeline(self, doc_id: uuid.UUID, attempt: int = 1) -> None:
        if attempt == 1:
            self.deliver(self.parse_message(doc_id))
        else:
            from sluice.ingest.events import ParseJob

            self.deliver(("ingest", ParseJob(doc_id, attempt)))
        self.deliver(self.chunk_message(doc_id, attempt))
        self.deliver(self.embed_message(doc_id, attempt))

    def document(self, doc_id: uuid.UUID):
        from sluice.db import documents as doc_repo

        with transaction() as conn:
            return doc_repo.get(conn, doc_id)

    def chunk_count(self, doc_id: uuid.UUID | None = None) -> int:
        from sluice.vectors import store

        with transaction() as conn:
            return store.count_chunks(conn, self.kb.collection_name, doc_id)

    def keys(self, prefix: str) -> list[str]:
        listed = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=prefix)
        return [o["Key"] for o in listed.get("Contents", [])]


@pytest.fixture
def harness(db_url, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        key_id = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["KeyId"]
        bucket = "sluice-test"
        s3.create_bucket(Bucket=bucket)
        embedder = FakeEmbedder()
        settings = get_settings().model_copy(update={"embed_batch_size": 2})
        ctx = StageContext(uow=transaction, store=ObjectStore(s3, bucket, key_id), settings=settings,
                           embedder_for=lambda spec: embedder)
        kb = KnowledgeBase(
            id=uuid.uuid4(), name="Handbook", collection_name=f"handbook_{uuid.uuid4().hex[:6]}",
            scope="personal", owner_id="alice", org_id=None, is_default=False, description="",
            embedding_provider="local", embedding_model="all-MiniLM-L6-v2", embedding_dim=DIM,
            embedding_base_url=None, embedding_secret_id=None, ingestion_config={"chunk_size": 300},
            created_by="alice",
        )
        with transaction() as conn:
            kb = kb_repo.insert(conn, kb)
        yield Harness(ctx, embedder, kb, s3, bucket, key_id)


def paragraphs(n: int, topic: str = "rotation") -> bytes:
    """A text of ``n`` distinct paragraphs, long enough to give several chunks at chunk_size 300."""
    return "\n\n".join(
        f"Paragraph {i} about {topic}: the on-call engineer rotates signing key number {i} every ninety days "
        f"and records rotation {i} in the audit ledger kept by the security team."
        for i in range(n)
    ).encode()


