"""The request half of a teardown (R-TD-1): in the caller's transaction, the rows go and the
reservation is committed with them; the workflow is started only after that commit.

What a teardown takes (seed 000, "deleting a base"):

* its bases' document rows, and the unfiled rows (no base files them) of each base's tenant —
  its organization's for an organization's base, the ones with no organization for an
  app-scoped base, none for a personal base (inside an organization or not: its owner needs no
  permission to claim the name) — unless another base of that tenant still holds the name;
* the table, when no other base holds the name and the table holds no unfiled chunk the
  teardown does not take; otherwise only these bases' chunks (and those of the rows it deleted).
  The operator's ``sluice drop`` drops the last holder's table whatever it holds;
* a default base is cleared, not deleted: its row stays, its documents go, and its table is
  dropped all the same unless a sibling holds the name.

Locks (R-TD-3): the name is taken exclusively first (a running chunk write holds it shared, so
the request waits for it, up to ``teardown_request_wait_seconds``, then answers 409 with a retry
hint), then each base row ``FOR UPDATE``, which conflicts with a write's ``FOR SHARE``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sluice.access import can_write, resolve_base, resolve_collection
from sluice.config import TeardownSettings
from sluice.db import knowledge_bases as kb_repo
from sluice.db import name_locks
from sluice.db import teardowns as td_repo
from sluice.db.connection import Connection, UnitOfWork
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.db.teardowns import Teardown
from sluice.errors import CollectionNotFoundError, ConflictError, NameBusyError, NotFoundError, ValidationError
from sluice.identity import Principal
from sluice.teardown.context import Workflow
from sluice.vectors import store as vector_store
from sluice.vectors.names import validate_collection_name

log = logging.getLogger("sluice.teardown")

# What a 409 asks the caller to wait before trying again.
RETRY_AFTER_SECONDS = 5
OPERATOR = "operator"


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def _take_name(conn: Connection, name: str, settings: TeardownSettings) -> None:
    if not name_locks.take(conn, name, wait_seconds=settings.teardown_request_wait_seconds):
        raise NameBusyError("A write to this collection is still running; try again shortly.",
                            retry_after=RETRY_AFTER_SECONDS)
    if kb_repo.teardown_reserved(conn, name):
        raise NameBusyError("A teardown of this collection is still running; try again when it is done.",
                            retry_after=RETRY_AFTER_SECONDS * 12)


def request_base_teardown(conn: Connection, p: Principal, kb_id: str, settings: TeardownSettings) -> Teardown:
    """``DELETE /kb/{kb_id}``: one base the caller writes (a default one is cleared)."""
    kb = resolve_base(conn, p, kb_id, write=True)
    _take_name(conn, kb.collection_name, settings)
    # Locked now, after the name: deleted or changed meanwhile, it is looked at again.
    kb = resolve_base(conn, p, kb.id, write=True, lock="update")
    return _tear_down(conn, kb.collection_name, [kb], requested_by=p.user_id, named=kb.id)


def request_collection_teardown(conn: Connection, p: Principal, name: str, settings: TeardownSettings) -> Teardown:
    """``DELETE /rag/collections/{name}``: every base on the name the caller writes.

    A base on the name the caller cannot write stays, and with it the table (only the
    torn-down bases' chunks go). A caller who writes none of them gets the absent answer.
    """
    bases = resolve_collection(conn, p, name, write=True)
    _take_name(conn, name, settings)
    return _tear_down(conn, name, _locked(conn, p, bases), requested_by=p.user_id)


def request_operator_drop(conn: Connection, name: str, settings: TeardownSettings, *, kb_id: str | None = None,
                          requested_by: str = OPERATOR) -> Teardown:
    """``sluice drop NAME [--knowledge-base ID]``: the operator's drop, through the same teardown.

    One base on the name is torn down (cleared if a default); several are refused unless
    ``kb_id`` names one, and the table then stays for the others; a name no base holds is
    dropped with its rows. The last holder's table goes whatever it holds: the operator owns it.
    """
    name = validate_collection_name(name, "name")
    holders = kb_repo.by_collection(conn, name)
    if kb_id is not None:
        target = [h for h in holders if str(h.id) == kb_id]
        if not target:
            raise ValidationError("That knowledge base does not hold this collection name",
                                  fields={"knowledge_base": f"No base {kb_id} holds '{name}'; the holders are: "
                                                            + (", ".join(str(h.id) for h in holders) or "none")})
    elif len(holders) > 1:
        raise ConflictError(
            f"{len(holders)} knowledge bases hold '{name}'; name the one to tear down with --knowledge-base.",
            details={"knowledge_bases": [str(h.id) for h in holders]},
        )
    else:
        target = holders
    if not target and not vector_store.table_exists(conn, name) and not kb_repo.unfiled_rows_hold(conn, name, None):
        raise NotFoundError(f"No collection '{name}': no base holds it, it has no table and no documents.")
    _take_name(conn, name, settings)
    locked = [kb for kb in (kb_repo.get(conn, b.id, lock="update") for b in sorted(target, key=lambda b: b.id))
              if kb is not None]
    if len(locked) != len(target):
        raise ConflictError("The knowledge base changed while the drop was prepared; run it again.")
    return _tear_down(conn, name, locked, requested_by=requested_by, operator=True,
                      named=uuid.UUID(kb_id) if kb_id else None)


def _locked(conn: Connection, p: Principal, bases: Sequence[KnowledgeBase]) -> list[KnowledgeBase]:
    """The bases locked FOR UPDATE (in id order, as every teardown locks them), still writable."""
    locked = [kb for kb in (kb_repo.get(conn, b.id, lock="update") for b in sorted(bases, key=lambda b: b.id))
              if kb is not None and can_write(p, kb)]
    if not locked:
        raise CollectionNotFoundError()
    return locked


@dataclass(frozen=True)
class UnfiledTaken:
    """The tenants whose unfiled rows (and chunks) a teardown takes."""

    orgs: tuple[str, ...]
    untenanted: bool


def _tenant(kb: KnowledgeBase) -> tuple[str, str | None] | None:
    """A base's tenant for unfiled content: ("org", id), ("none", None) for app scope, or None.

    A personal base has none, inside an organization or not: its owner needs no permission to
    claim a name, so one holding the organization's unfiled rows would take them with it
    (issue 26). Its own rows, and the chunks they name, go all the same.
    """
    if kb.scope == "app":
        return ("none", None)
    if kb.scope == "org" and kb.org_id is not None:
        return ("org", kb.org_id)
    return None


def unfiled_taken(bases: Sequence[KnowledgeBase], siblings: Sequence[KnowledgeBase]) -> UnfiledTaken:
    kept = {_tenant(s) for s in siblings}
    taken = {t for t in (_tenant(b) for b in bases) if t is not None and t not in kept}
    return UnfiledTaken(orgs=tuple(sorted(org for kind, org in taken if kind == "org" and org)),
                        untenanted=("none", None) in taken)


def _snapshot(kb: KnowledgeBase) -> dict[str, Any]:
    return {"id": str(kb.id), "name": kb.name, "scope": kb.scope, "org_id": kb.org_id, "owner_id": kb.owner_id,
            "is_default": kb.is_default, "grants": dict(kb.grants)}


def _tear_down(conn: Connection, name: str, bases: Sequence[KnowledgeBase], *, requested_by: str,
               named: uuid.UUID | None = None, operator: bool = False) -> Teardown:
    kb_ids = [b.id for b in bases]
    deleted = [b.id for b in bases if not b.is_default]
    cleared = [b.id for b in bases if b.is_default]
    siblings = [h for h in kb_repo.by_collection(conn, name) if h.id not in kb_ids]
    taken = unfiled_taken(bases, siblings)
    td = td_repo.insert(
        conn, id=uuid.uuid4(), collection_name=name, kb_id=named, drop_table=False, requested_by=requested_by,
        deleted_kb_ids=deleted, cleared_kb_ids=cleared, bases=[_snapshot(b) for b in bases],
        sync_source_ids=td_repo.sync_sources_of(conn, deleted),
        history=[{"at": now_iso(), "event": "requested", "by": requested_by}],
    )
    removed = td_repo.delete_documents(conn, td.id, name, kb_ids, unfiled_orgs=taken.orgs,
                                       unfiled_untenanted=taken.untenanted, every_unfiled=operator and not bases)
    if siblings:
        drop = False
    elif operator:
        drop = True
    else:
        # Content arriving after a claim cannot be refused, so the teardown spares it instead.
        drop = not vector_store.holds_unfiled_chunks_outside(
            conn, name, document_ids=td_repo.chunk_document_ids(conn, td.id, outside=kb_ids),
            orgs=taken.orgs, untenanted=taken.untenanted)
    if deleted:
        kb_repo.delete(conn, deleted)
    td_repo.update(conn, td.id, drop_table=drop, documents_removed=removed)
    refreshed = td_repo.get(conn, td.id)
    assert refreshed is not None
    log.info("teardown requested", extra={"teardown_id": str(td.id), "collection": name,
                                          "deleted": [str(i) for i in deleted], "cleared": [str(i) for i in cleared],
                                          "drop_table": drop, "documents": removed})
    return refreshed


def execution_name(td: Teardown) -> str:
    """One name per start: a retried start of the same attempt is the same execution."""
    return f"teardown-{td.id}-{td.attempts + 1}"


def start_workflow(uow: UnitOfWork, workflow: Workflow | None, td: Teardown) -> Teardown:
    """Start the workflow for a committed teardown. A start that fails leaves the reservation for
    the hourly sweep, and the receipt says so; the request has succeeded either way."""
    name = execution_name(td)
    with uow() as conn:
        td_repo.update(conn, td.id, add={"attempts": 1}, event={"at": now_iso(), "event": "started", "execution": name})
    try:
        if workflow is None:
            raise RuntimeError("no teardown workflow is configured (TEARDOWN_STATE_MACHINE_ARN)")
        arn = workflow.start(name, {"teardown_id": str(td.id)})
    except Exception:
        log.exception("the teardown workflow could not be started", extra={"teardown_id": str(td.id)})
        reason = "The teardown workflow could not be started; the hourly sweep starts it again."
        with uow() as conn:
            td_repo.update(conn, td.id, last_error=reason, event={"at": now_iso(), "event": "start failed",
                                                                  "reason": reason})
    else:
        with uow() as conn:
            td_repo.update(conn, td.id, execution_arn=arn)
    with uow() as conn:
        refreshed = td_repo.get(conn, td.id)
    assert refreshed is not None
    return refreshed
