"""The knowledge_bases and knowledge_base_grants tables."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from sluice.db.connection import Connection
from sluice.embedding.catalog import CatalogModel, find_model
from sluice.embedding.protocol import EmbeddingSpec


@dataclass
class KnowledgeBase:
    id: uuid.UUID
    name: str
    collection_name: str
    scope: str
    owner_id: str | None
    org_id: str | None
    is_default: bool
    description: str
    embedding_provider: str
    embedding_model: str
    embedding_dim: int
    embedding_base_url: str | None
    embedding_secret_id: str | None
    ingestion_config: dict[str, Any]
    created_by: str
    # R-SRCH-7: the text search configuration of the collection's full-text side.
    text_search_language: str = "simple"
    created_at: datetime | None = None
    updated_at: datetime | None = None
    grants: dict[str, str] = field(default_factory=dict)

    def embedding_spec(self) -> EmbeddingSpec:
        """How this base embeds: its space (model, width) and who serves it (provider, endpoint, key)."""
        return EmbeddingSpec(provider=self.embedding_provider, model=self.embedding_model, dim=self.embedding_dim,
                             base_url=self.embedding_base_url, secret_id=self.embedding_secret_id)

    def catalog_model(self) -> CatalogModel:
        """The catalog's entry for this base's model at its width (its input window)."""
        return find_model(self.embedding_provider, self.embedding_model, self.embedding_dim)


_FIELDS = (
    "id, name, collection_name, scope, owner_id, org_id, is_default, description, embedding_provider, "
    "embedding_model, embedding_dim, embedding_base_url, embedding_secret_id, ingestion_config, "
    "created_by, text_search_language, created_at, updated_at"
)


def _from_row(row: dict[str, Any]) -> KnowledgeBase:
    return KnowledgeBase(**row)


def insert(conn: Connection, kb: KnowledgeBase) -> KnowledgeBase:
    row = conn.execute(
        f"""
        INSERT INTO knowledge_bases (id, name, collection_name, scope, owner_id, org_id, is_default,
            description, embedding_provider, embedding_model, embedding_dim, embedding_base_url,
            embedding_secret_id, ingestion_config, created_by, text_search_language)
        VALUES (%(id)s, %(name)s, %(collection_name)s, %(scope)s, %(owner_id)s, %(org_id)s, %(is_default)s,
            %(description)s, %(embedding_provider)s, %(embedding_model)s, %(embedding_dim)s,
            %(embedding_base_url)s, %(embedding_secret_id)s, %(ingestion_config)s, %(created_by)s,
            %(text_search_language)s)
        RETURNING {_FIELDS}
        """,
        {**kb.__dict__, "ingestion_config": Jsonb(kb.ingestion_config)},
    ).fetchone()
    assert row is not None
    return _from_row(row)


def get(conn: Connection, kb_id: uuid.UUID, *, lock: str | None = None) -> KnowledgeBase | None:
    """The base, with its grants; ``lock`` "share" (a chunk write) or "update" (a change, a teardown)."""
    suffix = {None: "", "share": " FOR SHARE", "update": " FOR UPDATE"}[lock]
    row = conn.execute(f"SELECT {_FIELDS} FROM knowledge_bases WHERE id = %s{suffix}", (kb_id,)).fetchone()
    if row is None:
        return None
    kb = _from_row(row)
    kb.grants = grants_of(conn, kb.id)
    return kb


# What PATCH /kb/{id} may change; model, width, name and scope are fixed at creation (R-EMB-1).
UPDATABLE = frozenset({
    "name", "description", "embedding_provider", "embedding_base_url", "embedding_secret_id", "ingestion_config",
})


def update(conn: Connection, kb_id: uuid.UUID, changes: dict[str, Any]) -> KnowledgeBase:
    unknown = set(changes) - UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    values = {k: Jsonb(v) if k == "ingestion_config" else v for k, v in changes.items()}
    assignments = sql.SQL(", ").join(
        sql.SQL("{} = {}").format(sql.Identifier(k), sql.Placeholder(k)) for k in values
    )
    query = sql.SQL("UPDATE knowledge_bases SET {a}, updated_at = now() WHERE id = {i} RETURNING {f}").format(
        a=assignments, i=sql.Placeholder("_id"), f=sql.SQL(_FIELDS)
    ) if values else sql.SQL("SELECT {f} FROM knowledge_bases WHERE id = {i}").format(
        i=sql.Placeholder("_id"), f=sql.SQL(_FIELDS)
    )
    row = conn.execute(query, {**values, "_id": kb_id}).fetchone()
    assert row is not None
    kb = _from_row(row)
    kb.grants = grants_of(conn, kb.id)
    return kb


def by_collection(conn: Connection, collection_name: str) -> list[KnowledgeBase]:
    rows = conn.execute(
        f"SELECT {_FIELDS} FROM knowledge_bases WHERE collection_name = %s ORDER BY created_at, id",
        (collection_name,),
    ).fetchall()
    bases = [_from_row(r) for r in rows]
    _attach_grants(conn, bases)
    return bases


def candidates_for(conn: Connection, user_id: str, org_id: str | None) -> list[KnowledgeBase]:
    """Every base the principal might reach: own, own org's, app-wide, or granted."""
    rows = conn.execute(
        f"""
        SELECT {_FIELDS} FROM knowledge_bases kb
         WHERE (scope = 'personal' AND owner_id = %(user)s)
            OR (scope = 'org' AND org_id = %(org)s)
            OR scope = 'app'
            OR EXISTS (SELECT 1 FROM knowledge_base_grants g WHERE g.kb_id = kb.id AND g.user_id = %(user)s)
         ORDER BY created_at, id
        """,
        {"user": user_id, "org": org_id},
    ).fetchall()
    bases = [_from_row(r) for r in rows]
    _attach_grants(conn, bases)
    return bases


def grants_of(conn: Connection, kb_id: uuid.UUID) -> dict[str, str]:
    rows = conn.execute(
        "SELECT user_id, permission FROM knowledge_base_grants WHERE kb_id = %s", (kb_id,)
    ).fetchall()
    return {r["user_id"]: r["permission"] for r in rows}


def _attach_grants(conn: Connection, bases: list[KnowledgeBase]) -> None:
    if not bases:
        return
    rows = conn.execute(
        "SELECT kb_id, user_id, permission FROM knowledge_base_grants WHERE kb_id = ANY(%s)",
        ([b.id for b in bases],),
    ).fetchall()
    by_id = {b.id: b for b in bases}
    for r in rows:
        by_id[r["kb_id"]].grants[r["user_id"]] = r["permission"]


def upsert_grant(conn: Connection, kb_id: uuid.UUID, user_id: str, permission: str, by: str) -> None:
    conn.execute(
        """
        INSERT INTO knowledge_base_grants (kb_id, user_id, permission, granted_by)
        VALUES (%s, %s, %s, %s)
        ON CONFLICT (kb_id, user_id) DO UPDATE SET permission = EXCLUDED.permission,
            granted_by = EXCLUDED.granted_by
        """,
        (kb_id, user_id, permission, by),
    )


def delete_grant(conn: Connection, kb_id: uuid.UUID, user_id: str) -> bool:
    cur = conn.execute("DELETE FROM knowledge_base_grants WHERE kb_id = %s AND user_id = %s", (kb_id, user_id))
    return cur.rowcount > 0


def unfiled_rows_hold(conn: Connection, collection_name: str, org_id: str | None) -> bool:
    """Whether document rows no base files sit under the name for a tenant other than ``org_id``.

    Unfiled rows are what an operator's ingest (or a deleted base's leftovers) put
    there. A failed row with no vector id describes no chunk, so it holds nothing.
    A caller outside any organization shares a tenant with nobody.
    """
    row = conn.execute(
        """
        SELECT 1 FROM documents
         WHERE collection_name = %(name)s AND kb_id IS NULL
           AND (%(org)s::text IS NULL OR org_id IS DISTINCT FROM %(org)s::text)
           AND NOT (status = 'error' AND vector_document_id IS NULL)
         LIMIT 1
        """,
        {"name": collection_name, "org": org_id},
    ).fetchone()
    return row is not None


def teardown_reserved(conn: Connection, collection_name: str) -> bool:
    """Whether a teardown holds the name: from its request's commit until its release (R-TD-1)."""
    row = conn.execute(
        "SELECT 1 FROM collection_teardowns WHERE collection_name = %s AND released_at IS NULL LIMIT 1",
        (collection_name,),
    ).fetchone()
    return row is not None


def delete(conn: Connection, kb_ids: list[uuid.UUID]) -> int:
    """Delete bases (their grants go with them); the caller has deleted or kept their documents."""
    return conn.execute("DELETE FROM knowledge_bases WHERE id = ANY(%s)", (kb_ids,)).rowcount


# --- an organization's recipients base (sluice.access.shared, R-ACC-6) ------------------------

def insert_recipients_base(conn: Connection, *, name: str, collection_name: str, org_id: str, description: str,
                           model: CatalogModel, ingestion_config: dict[str, Any], created_by: str) -> None:
    """Create the organization's one recipients base unless it has one already (a racing share)."""
    conn.execute(
        """
        INSERT INTO knowledge_bases (id, name, collection_name, scope, owner_id, org_id, description,
            embedding_provider, embedding_model, embedding_dim, ingestion_config, created_by)
        VALUES (%s, %s, %s, 'recipients', NULL, %s, %s, %s, %s, %s, %s, %s)
        ON CONFLICT (org_id) WHERE scope = 'recipients' DO NOTHING
        """,
        (uuid.uuid4(), name, collection_name, org_id, description, model.provider, model.model, model.dim,
         Jsonb(ingestion_config), created_by),
    )


def recipients_base_id(conn: Connection, org_id: str) -> uuid.UUID | None:
    row = conn.execute("SELECT id FROM knowledge_bases WHERE scope = 'recipients' AND org_id = %s",
                       (org_id,)).fetchone()
    return row["id"] if row else None
