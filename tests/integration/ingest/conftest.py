"""Stage-level harness: the real stages against the real embedded PostgreSQL and a moto S3,
with a fake embedding provider (fakes are for the provider, never for the database)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from sluice.config import get_settings
from sluice.db import knowledge_bases as kb_repo
from sluice.db.connection import transaction
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.identity import Principal
from sluice.ingest.events import ObjectEvent
from sluice.ingest.routing import on_ingest_item, on_stage_artifact
from sluice.ingest.runner import StageContext
from sluice.ingest.uploads import DocumentFields, FileBytes, Intake, IntoBase, accept
from sluice.storage import stage_key
from tests.fakes import DIM, FakeEmbedder
from tests.integration.moto_bucket import Bucket

ALICE = Principal(user_id="alice", org_id=None, permissions=frozenset(), is_app_admin=False)


@dataclass
class Harness:
    ctx: StageContext
    embedder: FakeEmbedder
    kb: KnowledgeBase
    moto: Bucket
    delivered: list[tuple[str, Any]] = field(default_factory=list)

    def intake(self) -> Intake:
        """The upload side of the same context (its settings follow ctx.settings)."""
        return Intake(uow=self.ctx.uow, store=self.ctx.store, settings=self.ctx.settings)

    def upload(self, name: str, data: bytes, **fields: Any) -> uuid.UUID:
        accepted = accept(self.intake(), ALICE, IntoBase(str(self.kb.id)),
                          FileBytes(name, data, DocumentFields(**fields)))
        return accepted.document.id

    # The messages each stage's queue would carry.
    def object_event(self, key: str, *, created: bool = True) -> ObjectEvent:
        return self.moto.event(key, created=created)

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
        return self.moto.keys(prefix)


@pytest.fixture
def harness(db_url, bucket: Bucket) -> Harness:
    embedder = FakeEmbedder()
    settings = get_settings().model_copy(update={"embed_batch_size": 2})
    ctx = StageContext(uow=transaction, store=bucket.store, settings=settings, embedder_for=lambda spec: embedder)
    kb = KnowledgeBase(
        id=uuid.uuid4(), name="Handbook", collection_name=f"handbook_{uuid.uuid4().hex[:6]}",
        scope="personal", owner_id="alice", org_id=None, is_default=False, description="",
        embedding_provider="local", embedding_model="all-MiniLM-L6-v2", embedding_dim=DIM,
        embedding_base_url=None, embedding_secret_id=None, ingestion_config={"chunk_size": 300},
        created_by="alice",
    )
    with transaction() as conn:
        kb = kb_repo.insert(conn, kb)
    return Harness(ctx, embedder, kb, bucket)


def paragraphs(n: int, topic: str = "rotation") -> bytes:
    """A text of ``n`` distinct paragraphs, long enough to give several chunks at chunk_size 300."""
    return "\n\n".join(
        f"Paragraph {i} about {topic}: the on-call engineer rotates signing key number {i} every ninety days "
        f"and records rotation {i} in the audit ledger kept by the security team."
        for i in range(n)
    ).encode()


