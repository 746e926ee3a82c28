"""Sync sources (R-SYNC-1, R-SYNC-5): create, read, change, repoint, clone, delete.

A source belongs to one knowledge base, and the writers of that base manage it: every route
resolves the base with ``write=True`` first, and a source of another base is "not found",
byte for byte the answer for one that does not exist.

``config`` says where the documents are and nothing more: it is validated by the connector's
model and the connector's own rules in this deployment (a refusal names ``config.<field>``; an
S3 source never names a bucket of the stack), and a config carrying a credential is refused. What
authenticates is a vault secret the source names in ``secret_id``, which the person naming it
must be able to see (``secrets:view``, the secret's ``sluice:org_id``/``sluice:owner`` tags, as
for an embedding key), which must be tagged ``sluice:provider=<the connector's SECRET_KIND>`` and
which must be the base's tenant's (``access.keys.tenant_mismatch``). A clone and a repoint carry
the reference to another base, so they are checked as a create there is: the config again, and
the secret as the caller's to lend and the target's. A run asks the connector's rules and the
tenant again (``sync.connectors.ConnectorOpener``).

Creating, changing (including a repoint), cloning and deleting a source each write an audit
entry naming the actor, the connector, the collection and the secret's id - never the config.
A repoint also names the base and collection the source left.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sluice.access import can_write, resolve_base, resolve_collection
from sluice.access.keys import PROVIDER_TAG, KeyVault, key_visible, tenant_mismatch
from sluice.config import SyncContextSettings
from sluice.db import document_claims as claims
from sluice.db import knowledge_bases as kb_repo
from sluice.db import sync_runs as runs
from sluice.db import sync_sources as repo
from sluice.db.connection import Connection
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.db.sync_sources import AuditEntry, SyncSource
from sluice.errors import (
    CollectionNotFoundError,
    ConflictError,
    DocCapReachedError,
    UnprocessableError,
    ValidationError,
)
from sluice.identity import Principal
from sluice.sync.connectors import CONNECTORS, CREDENTIAL_SENTENCE, Connector
from sluice.sync.connectors.s3 import matches_any
from sluice.sync.schedule import checked_schedule

Mode = Literal["new_only", "update_only", "full"]


class CreateSyncSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    connector: str = Field(min_length=1, max_length=40, description="A connector of GET /rag/sync/connectors.")
    config: dict[str, Any] = Field(description="Where the documents are, per the connector's config_schema. "
                                               "Never a credential: that is secret_id.")
    secret_id: str | None = Field(None, min_length=1, max_length=2048,
                                  description="The vault secret the source reads with (the connector's secret_kind).")
    sync_mode: Mode = "new_only"
    organizational_unit: str | None = Field(None, max_length=200)
    schedule: str | None = Field(None, max_length=40, description="rate(1 day), rate(6 hours)...; null: by hand only.")


class PreviewSyncSource(BaseModel):
    """What a source would be (R-SYNC-8): the parts of a create body that decide who reads what."""

    model_config = ConfigDict(extra="ignore")  # a whole create body may be sent as it is

    connector: str = Field(min_length=1, max_length=40, description="A connector of GET /rag/sync/connectors.")
    config: dict[str, Any] = Field(default_factory=dict, description="The config the source would have.")
    secret_id: str | None = Field(None, min_length=1, max_length=2048)


@dataclass(frozen=True)
class Preview:
    """The audience sentence, and what a create of the same body would refuse, by field."""

    sentence: str
    refusals: dict[str, str]


class UpdateSyncSource(BaseModel):
    """Only what changes; ``null`` clears secret_id, organizational_unit or schedule."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1, max_length=200)
    config: dict[str, Any] | None = None
    secret_id: str | None = Field(None, min_length=1, max_length=2048)
    sync_mode: Mode | None = None
    organizational_unit: str | None = Field(None, max_length=200)
    schedule: str | None = Field(None, max_length=40)
    collection_name: str | None = Field(
        None, max_length=100, description="Must be the base's own: repoint with PATCH /rag/sync/sources/{id}.")


class RepointSyncSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    collection_name: str = Field(min_length=1, max_length=100)
    kb_id: str | None = Field(None, max_length=64,
                              description="Which base, when several that you write hold the collection.")


class CloneSyncSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kb_id: str | None = Field(None, max_length=64, description="The base the copy feeds (or collection_name).")
    collection_name: str | None = Field(None, max_length=100)
    name: str | None = Field(None, min_length=1, max_length=200)


@dataclass(frozen=True)
class ConnectorInfo:
    connector: str
    title: str
    secret_kind: str | None
    config_schema: dict[str, Any]
    change_signal: str


def connector_catalog() -> list[ConnectorInfo]:
    return [ConnectorInfo(name, cls.TITLE, cls.SECRET_KIND, cls.CONFIG_MODEL.model_json_schema(), cls.CHANGE_SIGNAL)
            for name, cls in sorted(CONNECTORS.items())]


# --- finding ----------------------------------------------------------------------------------------

def parse_id(value: str | uuid.UUID) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def get_source(conn: Connection, p: Principal, kb_id: str, source_id: str, *, for_update: bool = False
               ) -> tuple[SyncSource, KnowledgeBase]:
    """The source ``source_id`` of the base ``kb_id`` the caller writes; anything else is "not found"."""
    kb = resolve_base(conn, p, kb_id, write=True)
    ident = parse_id(source_id)
    source = repo.get(conn, ident, for_update=for_update) if ident else None
    if source is None or source.kb_id != kb.id:
        raise CollectionNotFoundError()
    return source, kb


def reachable_source(conn: Connection, p: Principal, source_id: str | uuid.UUID, *, for_update: bool = False
                     ) -> tuple[SyncSource, KnowledgeBase]:
    """A source by id alone (the /rag/sync/... routes), if the caller writes its base."""
    ident = parse_id(source_id)
    source = repo.get(conn, ident, for_update=for_update) if ident else None
    if source is None:
        raise CollectionNotFoundError()
    return source, resolve_base(conn, p, source.kb_id, write=True)


def list_sources(conn: Connection, p: Principal, kb_id: str) -> tuple[KnowledgeBase, list[SyncSource]]:
    kb = resolve_base(conn, p, kb_id, write=True)
    return kb, repo.list_for_kb(conn, kb.id)


# --- checks -------------------------------------------------------------------------------------------

def _connector(name: str) -> type[Connector]:
    cls = CONNECTORS.get(name)
    if cls is None:
        raise UnprocessableError("Unknown connector", fields={
            "connector": f"Choose one of: {', '.join(sorted(CONNECTORS))}."})
    return cls


def _checked_config(cls: type[Connector], config: dict[str, Any], settings: SyncContextSettings) -> dict[str, Any]:
    refusal = cls.validate_config(config, settings)
    if refusal is not None:
        field = f"config.{refusal.field}" if refusal.field else "config"
        if refusal.message == CREDENTIAL_SENTENCE:
            raise UnprocessableError("A credential does not go in a source's configuration.", fields={
                field: f"{CREDENTIAL_SENTENCE[0].upper()}{CREDENTIAL_SENTENCE[1:]}: store it as a vault secret "
                       "and name it in secret_id."})
        raise UnprocessableError("The connector refused the configuration", fields={field: refusal.message})
    return cls.parse_config(config).model_dump(mode="json")


def _check_credential(p: Principal, vault: KeyVault | None, settings: SyncContextSettings, cls: type[Connector],
                      config: dict[str, Any], secret_id: str | None, kb: KnowledgeBase) -> None:
    """The credential of a source of ``kb``: a secret the caller may lend, of the connector's kind and
    ``kb``'s tenant's (``tenant_mismatch``, which every run asks again) - or, for a bucket the operator
    named, the deployment's own role, which only an app admin may point a source at."""
    if cls.SECRET_KIND is None:
        if secret_id is not None:
            raise ValidationError("This connector takes no secret", fields={"secret_id": "Leave this empty."})
        return
    if secret_id is None and cls.SECRET_OPTIONAL:
        return
    if secret_id is None:
        container = str(config.get("bucket", ""))
        if p.is_app_admin and container and matches_any(container, settings.sync_function_role_buckets):
            return
        raise ValidationError("The source needs a credential", fields={
            "secret_id": f"Name a vault secret of kind {cls.SECRET_KIND} that the source reads with."})
    tags = vault.tags_of(secret_id) if vault is not None else None
    if tags is None or not key_visible(p, tags):
        raise ValidationError("Unknown secret", fields={"secret_id": "The vault holds no secret with this id that "
                                                                     "you can use."})
    if tags.get(PROVIDER_TAG) != cls.SECRET_KIND:
        raise ValidationError("This secret is not of the kind the connector takes", fields={
            "secret_id": f"The secret is not tagged {PROVIDER_TAG}={cls.SECRET_KIND}."})
    why = tenant_mismatch(tags, kb)
    if why is not None:
        raise ValidationError("This secret is not this base's to read with", fields={
            "secret_id": f"The secret does not belong to this base's tenant: {why}."})


def _room_for_a_source(conn: Connection, kb: KnowledgeBase, settings: SyncContextSettings) -> None:
    """A base has at most SYNC_MAX_SOURCES_PER_BASE sources: 409 with the cap's code (R-ERR-1) past it."""
    held = repo.lock_kb_sources(conn, kb.id)
    cap = settings.sync_max_sources_per_base
    if held >= cap:
        raise DocCapReachedError(
            f"This knowledge base already has {held} sync sources, the most a base may have "
            "(SYNC_MAX_SOURCES_PER_BASE); delete one to add another.", details={"cap": cap, "held": held})


def _no_active_run(conn: Connection, source: SyncSource, doing: str) -> None:
    active = runs.active_for_source(conn, source.id)
    if active is not None:
        raise ConflictError(f"A run of this source is going; {doing} after it finishes.",
                            details={"run_id": str(active.id)})


def _audit(conn: Connection, action: str, p: Principal, source: SyncSource, kb: KnowledgeBase, *,
           previous: KnowledgeBase | None = None, cloned_from: uuid.UUID | None = None) -> None:
    repo.audit(conn, AuditEntry(
        action=action, source_id=source.id, actor=p.user_id, connector=source.connector, kb_id=kb.id,
        collection_name=kb.collection_name, secret_id=source.secret_id,
        previous_kb_id=previous.id if previous else None,
        previous_collection_name=previous.collection_name if previous else None, cloned_from=cloned_from))


# --- changes ---------------------------------------------------------------------------------------

def create_source(conn: Connection, p: Principal, kb_id: str, body: CreateSyncSource, *, settings: SyncContextSettings,
                  vault: KeyVault | None) -> tuple[SyncSource, KnowledgeBase]:
    kb = resolve_base(conn, p, kb_id, write=True)
    cls = _connector(body.connector)
    config = _checked_config(cls, body.config, settings)
    _check_credential(p, vault, settings, cls, config, body.secret_id, kb)
    _room_for_a_source(conn, kb, settings)
    source = repo.insert(conn, SyncSource(
        id=uuid.uuid4(), kb_id=kb.id, name=body.name.strip() or body.name, connector=body.connector, config=config,
        secret_id=body.secret_id, sync_mode=body.sync_mode, organizational_unit=body.organizational_unit,
        schedule=checked_schedule(body.schedule, settings), created_by=p.user_id))
    _audit(conn, "sync_source.created", p, source, kb)
    return source, kb


def audience(kb: KnowledgeBase) -> str:
    """Who can search what a source of ``kb`` ingests (R-SYNC-8, seed 000 #982)."""
    if kb.scope == "personal":
        return f"its owner ({kb.owner_id}) alone"
    if kb.scope == "org":
        return f"everyone in the organization {kb.org_id} who can view this base"
    return "anybody in this deployment"


def preview_source(conn: Connection, p: Principal, kb_id: str, body: PreviewSyncSource, *,
                   settings: SyncContextSettings, vault: KeyVault | None) -> Preview:
    """What a source of ``body`` would do, before it exists: who reads what it ingests, and what a create
    would refuse. Nothing remote is read and no secret's value: the config by its connector's rules, the
    secret by its tags, as a create checks them."""
    kb = resolve_base(conn, p, kb_id, write=True)
    cls = _connector(body.connector)
    refusals: dict[str, str] = {}
    try:
        config = _checked_config(cls, body.config, settings)
    except UnprocessableError as exc:
        refusals.update(exc.details.get("fields", {}))
        config = dict(body.config)
    try:
        _check_credential(p, vault, settings, cls, config, body.secret_id, kb)
    except ValidationError as exc:
        refusals.update(exc.details.get("fields", {}))
    where = f"{kb.collection_name} by {audience(kb)}"
    if cls.SECRET_KIND is None:
        return Preview(f"This source needs no credential: it reads only what its address makes public, and "
                       f"everything it ingests becomes searchable in {where}.", refusals)
    if body.secret_id is None:
        credential = "The deployment's own role" if "secret_id" not in refusals else "The source's credential"
    else:
        # named only when the caller may lend it: an id the vault does not show them stays unnamed
        credential = "The source's credential" if "secret_id" in refusals else f"The secret {body.secret_id}"
    return Preview(f"{credential} can read whatever it has been granted, and everything it ingests becomes "
                   f"searchable in {where}.", refusals)


def update_source(conn: Connection, p: Principal, kb_id: str, source_id: str, body: UpdateSyncSource, *,
                  settings: SyncContextSettings, vault: KeyVault | None) -> tuple[SyncSource, KnowledgeBase]:
    source, kb = get_source(conn, p, kb_id, source_id, for_update=True)
    given = body.model_fields_set
    if "collection_name" in given and body.collection_name != kb.collection_name:
        raise ValidationError("A source is repointed with PATCH /rag/sync/sources/{id}", fields={
            "collection_name": "This base's sources feed its own collection; repoint the source with "
                               "PATCH /rag/sync/sources/{id}."})
    changes: dict[str, Any] = {}
    cls = _connector(source.connector)
    if "name" in given and body.name is not None:
        changes["name"] = body.name
    if "sync_mode" in given and body.sync_mode is not None:
        changes["sync_mode"] = body.sync_mode
    if "organizational_unit" in given:
        changes["organizational_unit"] = body.organizational_unit
    if "schedule" in given:
        changes["schedule"] = checked_schedule(body.schedule, settings)
    if "config" in given and body.config is not None:
        changes["config"] = _checked_config(cls, body.config, settings)
    if "secret_id" in given:
        changes["secret_id"] = body.secret_id
    if "config" in changes or "secret_id" in changes:
        _no_active_run(conn, source, "change where it reads or what it reads with")
        secret = changes.get("secret_id", source.secret_id)
        if secret != source.secret_id or "config" in changes:
            _check_credential(p, vault, settings, cls, changes.get("config", source.config), secret, kb)
    if not changes:
        return source, kb
    updated = repo.update(conn, source.id, changes)
    _audit(conn, "sync_source.updated", p, updated, kb)
    return updated, kb


def _target_base(conn: Connection, p: Principal, collection_name: str | None, kb_id: str | None) -> KnowledgeBase:
    """The base a repoint or a clone goes to, which the caller must write."""
    if kb_id is not None:
        kb = resolve_base(conn, p, kb_id, write=True)
        if collection_name is not None and kb.collection_name != collection_name:
            raise ValidationError("The base does not hold that collection", fields={
                "kb_id": "This base holds another collection."})
        return kb
    if collection_name is None:
        raise ValidationError("Name the base the source goes to", fields={
            "kb_id": "Give kb_id or collection_name."})
    bases = [b for b in resolve_collection(conn, p, collection_name, write=True) if can_write(p, b)]
    if len(bases) > 1:
        raise ValidationError("Several bases you write hold this collection", fields={
            "kb_id": "Name the base with kb_id."})
    return bases[0]


def _check_carried(p: Principal, vault: KeyVault | None, settings: SyncContextSettings, source: SyncSource,
                   target: KnowledgeBase) -> None:
    """A source carried to another base (a repoint, a clone) is checked as if created there: its config
    by today's rules (it may predate them), its credential as the caller's to lend and the target's."""
    cls = _connector(source.connector)
    _checked_config(cls, source.config, settings)
    _check_credential(p, vault, settings, cls, source.config, source.secret_id, target)


def repoint_source(conn: Connection, p: Principal, source_id: str, body: RepointSyncSource, *,
                   settings: SyncContextSettings, vault: KeyVault | None) -> tuple[SyncSource, KnowledgeBase]:
    """Move a source to another base (its audience changes: the audit names the base it left).

    Its claims are released: the documents it brought stay in the base they are in, no longer
    synced (nothing is deleted), and its next run fills the new base.
    """
    source, old = reachable_source(conn, p, source_id, for_update=True)
    target = _target_base(conn, p, body.collection_name, body.kb_id)
    if target.id == old.id:
        return source, old
    _check_carried(p, vault, settings, source, target)
    _no_active_run(conn, source, "repoint it")
    _room_for_a_source(conn, target, settings)
    claims.release_all(conn, source.id)
    moved = repo.update(conn, source.id, {"kb_id": target.id})
    _audit(conn, "sync_source.updated", p, moved, target, previous=old)
    return moved, target


def clone_source(conn: Connection, p: Principal, source_id: str, body: CloneSyncSource, *,
                 settings: SyncContextSettings, vault: KeyVault | None) -> tuple[SyncSource, KnowledgeBase]:
    """A copy of a source feeding another base: the same config and secret reference, a new audience."""
    source, _ = reachable_source(conn, p, source_id)
    target = _target_base(conn, p, body.collection_name, body.kb_id)
    _check_carried(p, vault, settings, source, target)
    _room_for_a_source(conn, target, settings)
    copy = repo.insert(conn, SyncSource(
        id=uuid.uuid4(), kb_id=target.id, name=body.name or f"{source.name} (copy)"[:200],
        connector=source.connector, config=source.config, secret_id=source.secret_id, sync_mode=source.sync_mode,
        organizational_unit=source.organizational_unit, schedule=source.schedule, created_by=p.user_id))
    _audit(conn, "sync_source.created", p, copy, target, cloned_from=source.id)
    return copy, target


def delete_source(conn: Connection, p: Principal, kb_id: str, source_id: str) -> SyncSource:
    """Delete a source, its claims and its runs' history; the documents it brought stay in the base."""
    source, kb = get_source(conn, p, kb_id, source_id, for_update=True)
    _no_active_run(conn, source, "delete it")
    _audit(conn, "sync_source.deleted", p, source, kb)
    repo.delete(conn, source.id)
    return source


def source_base(conn: Connection, source: SyncSource) -> KnowledgeBase | None:
    return kb_repo.get(conn, source.kb_id)
