"""Bases and principals for search against the real embedded PostgreSQL (fakes: tests/fakes.py)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import numpy as np
import psycopg

from sluice.db import knowledge_bases as kb_repo
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.identity import Principal


def make_base(conn: psycopg.Connection, collection: str, *, scope: str = "org", org: str | None = "acme",
              owner: str | None = None, dim: int = 8, language: str = "simple") -> KnowledgeBase:
    return kb_repo.insert(conn, KnowledgeBase(
        id=uuid.uuid4(), name=f"{collection} of {org or owner}", collection_name=collection, scope=scope,
        owner_id=owner, org_id=org, is_default=False, description="", embedding_provider="local",
        embedding_model="all-MiniLM-L6-v2", embedding_dim=dim, embedding_base_url=None,
        embedding_secret_id=None, ingestion_config={}, created_by=owner or "admin", text_search_language=language,
    ))


def viewer(org: str | None = "acme", user: str = "alice") -> Principal:
    return Principal(user_id=user, org_id=org, permissions=frozenset({"collections:view"}), is_app_admin=False)


def unit(v: Sequence[float]) -> list[float]:
    a = np.asarray(v, dtype=np.float32)
    return (a / np.linalg.norm(a)).tolist()
