"""Creating, reading and changing knowledge bases; the name claim (R-VEC-4) and one
embedding space per collection name (R-EMB-1)."""

from __future__ import annotations

import re
import secrets
import uuid
from typing import Any, Literal

import psycopg
from pydantic import BaseModel, ConfigDict, Field

from sluice.access.resolve import can_write, resolve_base
from sluice.chunking import validate_collection_config
from sluice.db import knowledge_bases as kb_repo
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.embedding import find_model
from sluice.errors import ConflictError, NotFoundError, ValidationError
from sluice.identity import Principal
from sluice.vectors.names import MAX_COLLECTION_CHARS, validate_collection_name

DEFAULT_PROVIDER = "local"
DEFAULT_MODEL = "all-MiniLM-L6-v2"


class CreateKnowledgeBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    collection_name: str | None = None
    scope: Literal["personal", "org", "app"] = "personal"
    description: str = Field("", max_length=2000)
    embedding_provider: str | None = None
    embedding_model: str | None = None
    embedding_dim: int | None = None
    embedding_base_url: str | None = None
    embedding_secret_id: str | None = None
    ingestion_config: dict[str, Any] | None = None


def derive_collection_name(display_name: str) -> str:
    """The display name as an identifier plus six random hex characters."""
    slug = re.sub(r"[^a-z0-9]+", "_", display_name.lower()).strip("_") or "collection"
    if slug[0].isdigit():
        slug = "c_" + slug
    slug = slug[: MAX_COLLECTION_CHARS - 7].rstrip("_")
    return f"{slug}_{secrets.token_hex(3)}"


def claim_name(conn: psycopg.Connection, p: Principal, name: str) -> list[KnowledgeBase]:
    """Refuse a name held outside the caller's reach or reserved by a teardown; return its holders."""
    # Serialise claims of one name so two creators cannot both find it free.
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('claim:' || %s))", (name,))
    if kb_repo.teardown_reserved(conn, name):
        raise ConflictError(
            "This collection name is being torn down; try again shortly or choose another name.",
            fields={"collection_name": "This name is reserved by a teardown in progress."},
        )
    holders = kb_repo.by_collection(conn, name)
    if any(not can_write(p, h) for h in holders):
        raise ConflictError(
            "This collection name is already taken.",
            fields={"collection_name": "This name is already taken; choose another."},
        )
    return holders


def _embedding_choice(body: CreateKnowledgeBase, holders: list[KnowledgeBase]) -> dict[str, Any]:
    if holders:
        space = holders[0]
        chosen = {
            "embedding_provider": body.embedding_provider,
            "embedding_model": body.embedding_model,
            "embedding_dim": body.embedding_dim,
        }
        disagreeing = {k: f"This collection embeds with {getattr(space, k)}; a base on it must too."
                       for k, v in chosen.items() if v is not None and v != getattr(space, k)}
        if disagreeing:
            raise ValidationError("A collection name is one embedding space", fields=disagreeing)
        return {
            "embedding_provider": space.embedding_provider,
            "embedding_model": space.embedding_model,
            "embedding_dim": space.embedding_dim,
            "embedding_base_url": body.embedding_base_url or space.embedding_base_url,
            "embedding_secret_id": body.embedding_secret_id or space.embedding_secret_id,
        }
    provider = body.embedding_provider or DEFAULT_PROVIDER
    model = body.embedding_model or (DEFAULT_MODEL if provider == DEFAULT_PROVIDER else None)
    if model is None:
        raise ValidationError("Choose an embedding model",
                              fields={"embedding_model": "Choose one of the provider's models."})
    entry = find_model(provider, model, body.embedding_dim)
    return {
        "embedding_provider": entry.provider,
        "embedding_model": entry.model,
        "embedding_dim": body.embedding_dim or entry.dim,
        "embedding_base_url": body.embedding_base_url,
        "embedding_secret_id": body.embedding_secret_id,
    }


def create_base(conn: psycopg.Connection, p: Principal, body: CreateKnowledgeBase) -> KnowledgeBase:
    if body.scope == "org":
        if not p.org_id or not (p.can("collections:edit") or p.is_app_admin):
            raise ValidationError("You cannot create an organization knowledge base",
                                  fields={"scope": "Needs an organization and collections:edit."})
    elif body.scope == "app" and not p.is_app_admin:
        raise ValidationError("Only an app admin creates app-wide knowledge bases",
                              fields={"scope": "Only an app admin may choose app."})
    name = body.collection_name
    if name is None:
        name = derive_collection_name(body.name)
    validate_collection_name(name)
    holders = claim_name(conn, p, name)
    embedding = _embedding_choice(body, holders)
    entry = find_model(embedding["embedding_provider"], embedding["embedding_model"], embedding["embedding_dim"])
    config = validate_collection_config(body.ingestion_config or {}, max_input_tokens=entry.max_input_tokens)
    kb = KnowledgeBase(
        id=uuid.uuid4(),
        name=body.name,
        collection_name=name,
        scope=body.scope,
        owner_id=p.user_id if body.scope == "personal" else None,
        org_id=p.org_id if body.scope in ("org", "personal") else None,
        is_default=False,
        description=body.description,
        ingestion_config=config.model_dump(exclude_none=True),
        created_by=p.user_id,
        **embedding,
    )
    return kb_repo.insert(conn, kb)


def get_base(conn: psycopg.Connection, p: Principal, kb_id: str) -> KnowledgeBase:
    return resolve_base(conn, p, kb_id)


def require_base(conn: psycopg.Connection, kb_id: uuid.UUID) -> KnowledgeBase:
    kb = kb_repo.get(conn, kb_id)
    if kb is None:
        raise NotFoundError("Knowledge base not found")
    return kb


def list_bases(conn: psycopg.Connection, p: Principal) -> list[KnowledgeBase]:
    from sluice.access.resolve import readable_bases

    return readable_bases(conn, p)
