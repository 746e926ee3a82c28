"""Fixtures for search against the real embedded PostgreSQL: a connection, bases, chunks, a fixed embedder."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from sluice.db import knowledge_bases as kb_repo
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.embedding import EmbeddingSpec
from sluice.identity import Principal


@pytest.fixture
def conn(db_url):
    with psycopg.connect(db_url, row_factory=psycopg.rows.dict_row) as c:
        register_vector(c)
        yield c


def make_base(conn: psycopg.Connection, collection: str, *, scope: str = "org", org: str | None = "acme",
              owner: str | None = None, dim: int = 8) -> KnowledgeBase:
    return kb_repo.insert(conn, KnowledgeBase(
        id=uuid.uuid4(), name=f"{collection} of {org or owner}", collection_name=collection, scope=scope,
        owner_id=owner, org_id=org, is_default=False, description="", embedding_provider="local",
        embedding_model="all-MiniLM-L6-v2", embedding_dim=dim, embedding_base_url=None,
        embedding_secret_id=None, ingestion_config={}, created_by=owner or "admin",
    ))


def viewer(org: str | None = "acme", user: str = "alice") -> Principal:
    return Principal(user_id=user, org_id=org, permissions=frozenset({"collections:view"}), is_app_admin=False)


class FixedEmbedder:
    """Answers one query vector whatever the text: the tests choose geometry, not language."""

    def __init__(self, vector: Sequence[float]) -> None:
        self.vector = list(vector)

    def embed_query(self, text: str) -> list[float]:
        return self.vector


def embedder_returning(vector: Sequence[float]):
    embedder = FixedEmbedder(vector)

    def embedder_for(spec: EmbeddingSpec) -> FixedEmbedder:
        return embedder

    return embedder_for


def unit(v: Sequence[float]) -> list[float]:
    a = np.asarray(v, dtype=np.float32)
    return (a / np.linalg.norm(a)).tolist()
