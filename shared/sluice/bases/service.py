"""Creating, reading and changing knowledge bases: one embedding space per collection name (R-EMB-1),
one text search language (R-SRCH-7), a key bound only by who may see it, the name claimed first
(``bases.names``, R-VEC-4). Who reaches a base is ``sluice.access``; its grants are ``access.grants``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sluice.access.keys import KEYED_PROVIDERS, KeyVault, check_key_binding
from sluice.access.resolve import ReachableCollection, reachable_collections, readable_bases, resolve_base
from sluice.access.vision import stored_config
from sluice.bases.names import claim_name, derive_collection_name
from sluice.chunking import validate_collection_config
from sluice.db import knowledge_bases as kb_repo
from sluice.db.connection import Connection
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.embedding import CatalogModel, find_model, load_catalog
from sluice.embedding.endpoints import deployment_policy, endpoint_problem
from sluice.errors import ConflictError, ValidationError
from sluice.identity import Principal
from sluice.vectors import fulltext as vector_fulltext
from sluice.vectors.names import validate_collection_name


@dataclass(frozen=True)
class DefaultEmbedding:
    """The embedding a base gets when its creator names none: the deployment's choice (its operator's)."""

    provider: str = "local"
    model: str = "all-MiniLM-L6-v2"


# A derived name is random; a second draw is for the astronomically unlikely taken one.
_DERIVE_ATTEMPTS = 3


class CreateKnowledgeBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    collection_name: str | None = None
    scope: Literal["personal", "org", "app"] = "personal"
    description: str = Field("", max_length=2000)
    embedding_provider: str | None = None
    embedding_model: str | None = None
    embedding_dim: int | None = None
    embedding_base_url: str | None = Field(None, max_length=2000)
    embedding_secret_id: str | None = Field(None, min_length=1, max_length=2048)
    ingestion_config: dict[str, Any] | None = None
    text_search_language: str | None = Field(
        None, max_length=63, description="The text search configuration of the full-text side (R-SRCH-7): one of "
        "GET /rag/text-search-languages; default simple, or the collection's when it exists. Fixed once set.")


class UpdateKnowledgeBase(BaseModel):
    """PATCH /kb/{id}: what is sent changes; what is left out stays. Model and width never change."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = Field(None, max_length=2000)
    embedding_provider: str | None = None
    embedding_base_url: str | None = Field(None, max_length=2000)
    embedding_secret_id: str | None = Field(None, min_length=1, max_length=2048)
    ingestion_config: dict[str, Any] | None = None
    # Accepted only to refuse a change with a sentence rather than an unknown-field error.
    embedding_model: str | None = None
    embedding_dim: int | None = None
    collection_name: str | None = None
    scope: str | None = None
    text_search_language: str | None = None


def _check_endpoint(provider: str, base_url: str | None) -> None:
    if base_url is None:
        return
    if provider not in KEYED_PROVIDERS:
        raise ValidationError(
            "This embedding provider takes no endpoint",
            fields={"embedding_base_url": f"The '{provider}' provider takes no endpoint; leave this empty."},
        )
    problem = endpoint_problem(base_url, deployment_policy())
    if problem is not None:
        raise ValidationError("Invalid embedding endpoint", fields={"embedding_base_url": problem})


def _adoptable_key(p: Principal, vault: KeyVault | None, scope: str, space: KnowledgeBase) -> str | None:
    """The holder's key, when the caller could have bound it themselves; else none."""
    if space.embedding_secret_id is None:
        return None
    try:
        check_key_binding(p, vault, scope=scope, provider=space.embedding_provider,
                          base_url=space.embedding_base_url, secret_id=space.embedding_secret_id)
    except ValidationError:
        return None
    return space.embedding_secret_id


def _embedding_choice(p: Principal, body: CreateKnowledgeBase, holders: list[KnowledgeBase],
                      vault: KeyVault | None, default: DefaultEmbedding) -> tuple[dict[str, Any], CatalogModel]:
    if holders:
        # A name that exists is one embedding space: adopt it, refuse a disagreeing choice (R-EMB-1).
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
        secret_id = body.embedding_secret_id
        if secret_id is None:
            secret_id = _adoptable_key(p, vault, body.scope, space)
        choice: dict[str, Any] = {
            "embedding_provider": space.embedding_provider,
            "embedding_model": space.embedding_model,
            "embedding_dim": space.embedding_dim,
            "embedding_base_url": body.embedding_base_url or space.embedding_base_url,
            "embedding_secret_id": secret_id,
        }
        entry = find_model(space.embedding_provider, space.embedding_model, space.embedding_dim)
    else:
        provider = body.embedding_provider or default.provider
        model = body.embedding_model or (default.model if provider == default.provider else None)
        if model is None:
            # A provider other than the deployment's default has no default model: the chooser names one.
            offered = [m.model for m in load_catalog() if m.provider == provider]
            if not offered:
                find_model(provider, "")  # refuses the unknown provider, naming the field
            raise ValidationError("Choose an embedding model", fields={
                "embedding_model": f"Choose one of the '{provider}' models: {', '.join(offered)}."})
        entry = find_model(provider, model, body.embedding_dim)
        choice = {
            "embedding_provider": entry.provider,
            "embedding_model": entry.model,
            "embedding_dim": entry.dim,
            "embedding_base_url": body.embedding_base_url,
            "embedding_secret_id": body.embedding_secret_id,
        }
    _check_endpoint(choice["embedding_provider"], choice["embedding_base_url"])
    check_key_binding(p, vault, scope=body.scope, provider=choice["embedding_provider"],
                      base_url=choice["embedding_base_url"], secret_id=choice["embedding_secret_id"])
    return choice, entry


def _check_scope(p: Principal, scope: str) -> None:
    if scope == "org" and not (p.org_id and p.can("collections:edit")):
        raise ValidationError("You cannot create an organization knowledge base",
                              fields={"scope": "An organization base needs an organization and collections:edit."})
    if scope == "app" and not p.is_app_admin:
        raise ValidationError("Only an app admin creates app-wide knowledge bases",
                              fields={"scope": "Only an app admin may choose app."})


def create_base(conn: Connection, p: Principal, body: CreateKnowledgeBase,
                vault: KeyVault | None = None, default: DefaultEmbedding = DefaultEmbedding(),
                kb_id: uuid.UUID | None = None) -> KnowledgeBase:
    """A new base; ``kb_id`` only where a fixed id is the point (`sluice local seed-events`)."""
    _check_scope(p, body.scope)
    if body.collection_name is not None:
        name = validate_collection_name(body.collection_name)
        holders = claim_name(conn, p, name)
    else:
        for attempt in range(_DERIVE_ATTEMPTS):
            name = validate_collection_name(derive_collection_name(body.name))
            try:
                holders = claim_name(conn, p, name)
                break
            except ConflictError:
                if attempt == _DERIVE_ATTEMPTS - 1:
                    raise
    embedding, entry = _embedding_choice(p, body, holders, vault, default)
    language = _language_choice(conn, name, body.text_search_language, holders)
    config = validate_collection_config(body.ingestion_config or {}, max_input_tokens=entry.max_input_tokens)
    kb = KnowledgeBase(
        id=kb_id or uuid.uuid4(),
        name=body.name,
        collection_name=name,
        scope=body.scope,
        owner_id=p.user_id if body.scope == "personal" else None,
        # A personal base records its owner's organization: the tenant stamped on its chunks.
        org_id=p.org_id if body.scope in ("org", "personal") else None,
        is_default=False,
        description=body.description,
        ingestion_config=stored_config(p, vault, scope=body.scope, config=config.model_dump(exclude_none=True)),
        created_by=p.user_id,
        text_search_language=language,
        **embedding,
    )
    return kb_repo.insert(conn, kb)


def _language_choice(conn: Connection, name: str, asked: str | None, holders: list[KnowledgeBase]) -> str:
    """R-SRCH-7: a collection has one language, its table's; a base joining one takes it, and a
    base asking for another is refused with the field named."""
    existing = holders[0].text_search_language if holders else vector_fulltext.table_language(conn, name)
    if existing is None:
        return vector_fulltext.check_language(conn, vector_fulltext.DEFAULT_LANGUAGE if asked is None else asked)
    if asked is not None and asked != existing:
        raise ValidationError("A collection has one text search language", fields={
            "text_search_language": f"This collection searches text in {existing}; a base on it must too."})
    return existing


def _refuse_fixed(kb: KnowledgeBase, body: UpdateKnowledgeBase) -> None:
    fixed = {
        "embedding_model": "The embedding model is fixed when a collection is created; create a new base to "
                           "embed with another.",
        "embedding_dim": "The embedding width is fixed when a collection is created; create a new base to "
                         "embed at another.",
        "collection_name": "A base's collection name cannot change.",
        "scope": "A base's scope cannot change.",
        "text_search_language": "The text search language is fixed when a collection is created; create a new "
                                "base to search in another.",
    }
    changed = {k: why for k, why in fixed.items()
               if k in body.model_fields_set and getattr(body, k) != getattr(kb, k)}
    if changed:
        raise ValidationError("These settings cannot change", fields=changed)


def _rebound_key(p: Principal, vault: KeyVault | None, kb: KnowledgeBase, provider: str, base_url: str | None,
                 secret_id: str | None, *, sent: bool) -> str | None:
    """The key a base keeps when its endpoint or provider changes.

    The key was lent for the address it was bound with: sent anywhere else, it is
    a new loan, and only a caller who may see the key makes it. So a key the
    caller left out of the change stays only if they could bind it themselves;
    otherwise it is cleared (the base goes on keyless), never carried to an
    address its owner did not choose. A key named explicitly is checked as any
    binding is (``check_key_binding`` refuses one the caller cannot see).
    """
    moved = (provider, base_url) != (kb.embedding_provider, kb.embedding_base_url)
    if sent or not moved or secret_id is None or secret_id != kb.embedding_secret_id:
        return secret_id
    return _adoptable_key(p, vault, kb.scope, replace(kb, embedding_provider=provider, embedding_base_url=base_url))


def update_base(conn: Connection, p: Principal, kb_id: str, body: UpdateKnowledgeBase,
                vault: KeyVault | None = None) -> KnowledgeBase:
    """PATCH /kb/{id}: the provider, endpoint, key and ingestion config may change; the space may not."""
    kb = resolve_base(conn, p, kb_id, write=True, lock="update")
    _refuse_fixed(kb, body)
    sent = body.model_fields_set
    changes: dict[str, Any] = {}
    for field in ("name", "description"):
        if field in sent and getattr(body, field) is not None and getattr(body, field) != getattr(kb, field):
            changes[field] = getattr(body, field)

    provider = body.embedding_provider if "embedding_provider" in sent and body.embedding_provider \
        else kb.embedding_provider
    keyed = provider in KEYED_PROVIDERS
    base_url = body.embedding_base_url if "embedding_base_url" in sent else (kb.embedding_base_url if keyed else None)
    secret_id = body.embedding_secret_id if "embedding_secret_id" in sent else (
        kb.embedding_secret_id if keyed else None)
    try:
        entry = find_model(provider, kb.embedding_model, kb.embedding_dim)
    except ValidationError:
        raise ValidationError(
            "The provider does not serve this collection's model",
            fields={"embedding_provider": f"'{provider}' does not serve {kb.embedding_model} at width "
                                          f"{kb.embedding_dim}, which this collection embeds with."},
        ) from None
    if (provider, base_url, secret_id) != (kb.embedding_provider, kb.embedding_base_url, kb.embedding_secret_id):
        _check_endpoint(provider, base_url)
        secret_id = _rebound_key(p, vault, kb, provider, base_url, secret_id,
                                 sent="embedding_secret_id" in sent)
        check_key_binding(p, vault, scope=kb.scope, provider=provider, base_url=base_url, secret_id=secret_id,
                          already_bound=secret_id is not None and secret_id == kb.embedding_secret_id
                          and (provider, base_url) == (kb.embedding_provider, kb.embedding_base_url))
        changes.update(embedding_provider=provider, embedding_base_url=base_url, embedding_secret_id=secret_id)

    if "ingestion_config" in sent:
        config = validate_collection_config(body.ingestion_config or {}, max_input_tokens=entry.max_input_tokens)
        changes["ingestion_config"] = stored_config(p, vault, scope=kb.scope,
                                                    config=config.model_dump(exclude_none=True),
                                                    previous=kb.ingestion_config)
    if not changes:
        return kb
    return kb_repo.update(conn, kb.id, changes)


def get_base(conn: Connection, p: Principal, kb_id: str) -> KnowledgeBase:
    return resolve_base(conn, p, kb_id)


def list_bases(conn: Connection, p: Principal) -> list[KnowledgeBase]:
    return readable_bases(conn, p)


def list_collections(conn: Connection, p: Principal) -> list[ReachableCollection]:
    return reachable_collections(conn, p)
