"""Teardowns against the real embedded PostgreSQL and a moto S3: bases of any scope and tenant,
documents ingested through the real stages (a fake embedding provider), and the teardown's own
steps run in this process (the e2e tests run them through the state machine)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from sluice.config import get_settings
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db import teardowns as td_repo
from sluice.db.connection import transaction
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.db.teardowns import Teardown
from sluice.identity import Principal
from sluice.ingest.events import ObjectEvent
from sluice.ingest.routing import on_ingest_item, on_stage_artifact
from sluice.ingest.runner import StageContext
from sluice.ingest.uploads import FileBytes, Intake, IntoBase, accept
from sluice.search.service import SearchRequest, search
from sluice.storage import stage_key
from sluice.teardown import TeardownContext, run_all
from sluice.vectors import store
from tests.fakes import DIM, FakeEmbedder
from tests.integration.moto_bucket import Bucket

EDIT = frozenset({"collections:view", "collections:edit"})


def editor(org: str | None, user: str | None = None) -> Principal:
    return Principal(user_id=user or f"editor_{org}", org_id=org, permissions=EDIT, is_app_admin=False)


def owner(user: str, org: str | None = None) -> Principal:
    return Principal(user_id=user, org_id=org, permissions=frozenset(), is_app_admin=False)


@dataclass
class World:
    stages: StageContext
    teardowns: TeardownContext
    embedder: FakeEmbedder
    moto: Bucket

    # --- bases and documents --------------------------------------------------------------
    def base(self, collection: str, *, scope: str = "org", org: str | None = "acme", owner_id: str | None = None,
             is_default: bool = False, name: str | None = None) -> KnowledgeBase:
        """A base inserted as a migration or an operator would (the claim is tested on its own)."""
        with transaction() as conn:
            return kb_repo.insert(conn, KnowledgeBase(
                id=uuid.uuid4(), name=name or f"{collection} of {org or owner_id}", collection_name=collection,
                scope=scope, owner_id=owner_id if scope == "personal" else None, org_id=org, is_default=is_default,
                description="", embedding_provider="local", embedding_model="all-MiniLM-L6-v2", embedding_dim=DIM,
                embedding_base_url=None, embedding_secret_id=None, ingestion_config={"chunk_size": 300},
                created_by=owner_id or "admin"))

    @staticmethod
    def writer_of(kb: KnowledgeBase) -> Principal:
        if kb.scope == "personal":
            assert kb.owner_id is not None
            return owner(kb.owner_id, kb.org_id)
        if kb.scope == "app":
            return Principal(user_id="root", org_id=None, permissions=frozenset(), is_app_admin=True)
        return editor(kb.org_id)

    def intake(self) -> Intake:
        return Intake(uow=transaction, store=self.stages.store, settings=self.stages.settings)

    def upload(self, kb: KnowledgeBase, filename: str, data: bytes) -> uuid.UUID:
        accepted = accept(self.intake(), self.writer_of(kb), IntoBase(str(kb.id)), FileBytes(filename, data))
        return accepted.document.id

    def event(self, key: str) -> ObjectEvent:
        return self.moto.event(key)

    def pipeline(self, doc_id: uuid.UUID, storage_path: str, between: Callable[[str], None] | None = None) -> None:
        """What S3's events would run after an upload: each stage when (and only if) its object exists.
        ``between`` is called with each stage's name (parse, chunk, embed) once it has had its turn."""
        if self.stages.store.head(storage_path) is not None:
            on_ingest_item(self.stages, self.event(storage_path))
        if between is not None:
            between("parse")
        for artifact, stage in (("parsed", "chunk"), ("chunks", "embed")):
            key = stage_key(artifact, doc_id, 1)
            if self.stages.store.head(key) is not None:
                on_stage_artifact(self.stages, self.event(key))
            if between is not None:
                between(stage)

    def ingest(self, kb: KnowledgeBase, filename: str, data: bytes) -> uuid.UUID:
        doc_id = self.upload(kb, filename, data)
        with transaction() as conn:
            doc = doc_repo.get(conn, doc_id)
        assert doc is not None and doc.storage_path
        self.pipeline(doc_id, doc.storage_path)
        with transaction() as conn:
            done = doc_repo.get(conn, doc_id)
        assert done is not None and done.status == "done", done
        return doc_id

    # --- what there is ----------------------------------------------------------------------
    def objects(self, prefix: str = "") -> dict[str, int]:
        found: dict[str, int] = {}
        for page in self.moto.s3.get_paginator("list_objects_v2").paginate(Bucket=self.moto.name, Prefix=prefix):
            found.update({o["Key"]: o["Size"] for o in page.get("Contents", [])})
        return found

    def objects_of(self, doc_ids: set[uuid.UUID]) -> dict[str, int]:
        """The objects under a set of documents' keys: rag/ originals (by row), text/, stage/."""
        with transaction() as conn:
            paths = {d.storage_path for d in (doc_repo.get(conn, i) for i in doc_ids) if d and d.storage_path}
        ids = {str(i) for i in doc_ids}
        return {k: v for k, v in self.objects().items()
                if k in paths or any(i in k for i in ids)}

    @staticmethod
    def chunks(collection: str, kb_id: uuid.UUID | None = None) -> int:
        with transaction() as conn:
            if not store.table_exists(conn, collection):
                return 0
            if kb_id is None:
                return store.count_chunks(conn, collection)
            return store.count_chunks_of(conn, collection, [kb_id])

    @staticmethod
    def document_ids(kb: KnowledgeBase) -> set[uuid.UUID]:
        with transaction() as conn:
            return {d.id for d in doc_repo.list_for_kb(conn, kb.id, limit=10_000, offset=0)}

    def search(self, p: Principal, collection: str, query: str) -> list[str]:
        with transaction() as conn:
            outcome = search(conn, p, SearchRequest(query=query, collections=[collection], top_k=10),
                             lambda spec: self.embedder)
        return [c.content for c in outcome.results]

    # --- teardowns ----------------------------------------------------------------------------
    def run(self, td: Teardown) -> Teardown:
        return run_all(self.teardowns, td.id)

    @staticmethod
    def teardown(teardown_id: uuid.UUID) -> Teardown:
        with transaction() as conn:
            td = td_repo.get(conn, teardown_id)
        assert td is not None
        return td


@pytest.fixture
def world(db_url, bucket: Bucket) -> World:
    embedder = FakeEmbedder()
    settings = get_settings().model_copy(update={"embed_batch_size": 8})
    stages = StageContext(uow=transaction, store=bucket.store, settings=settings, embedder_for=lambda spec: embedder)
    return World(stages, TeardownContext(uow=transaction, store=bucket.store, settings=settings),
                 embedder, bucket)


def text(topic: str, paragraphs: int = 4) -> bytes:
    """A document of distinct paragraphs (several chunks at chunk_size 300)."""
    return "\n\n".join(
        f"Section {i} of the {topic} guide: the team reviews {topic} item {i} every quarter and files the "
        f"outcome of review {i} with the {topic} board for the record."
        for i in range(paragraphs)
    ).encode()
