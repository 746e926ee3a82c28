"""Resolution of a named base or collection through its knowledge base rows (R-ACC-2).

Every refusal is ``CollectionNotFoundError``: out of reach and absent are one
answer, so the API cannot be used to learn which names exist.
"""

from __future__ import annotations

import uuid

import psycopg

from sluice.db import knowledge_bases as kb_repo
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import CollectionNotFoundError
from sluice.identity import Principal


def can_read(p: Principal, kb: KnowledgeBase) -> bool:
    if p.is_app_admin or kb.scope == "app":
        return True
    if p.user_id in kb.grants:
        return True
    if kb.scope == "personal":
        return kb.owner_id == p.user_id
    return kb.org_id is not None and kb.org_id == p.org_id and (
        p.can("collections:view") or p.can("collections:edit")
    )


def can_write(p: Principal, kb: KnowledgeBase) -> bool:
    if p.is_app_admin:
        return True
    if kb.grants.get(p.user_id) == "edit":
        return True
    if kb.scope == "personal":
        return kb.owner_id == p.user_id
    if kb.scope == "org":
        return kb.org_id is not None and kb.org_id == p.org_id and p.can("collections:edit")
    return False  # app scope: app admins only


def _check(p: Principal, kb: KnowledgeBase | None, write: bool) -> KnowledgeBase:
    if kb is None or not can_read(p, kb) or (write and not can_write(p, kb)):
        raise CollectionNotFoundError()
    return kb


def resolve_base(conn: psycopg.Connection, p: Principal, kb_id: str | uuid.UUID, *, write: bool = False,
                 lock: str | None = None) -> KnowledgeBase:
    try:
        ident = kb_id if isinstance(kb_id, uuid.UUID) else uuid.UUID(str(kb_id))
    except ValueError:
        raise CollectionNotFoundError() from None
    return _check(p, kb_repo.get(conn, ident, lock=lock), write)


def readable_bases(conn: psycopg.Connection, p: Principal) -> list[KnowledgeBase]:
    if p.is_app_admin:
        rows = conn.execute("SELECT id FROM knowledge_bases ORDER BY created_at, id").fetchall()
        return [b for b in (kb_repo.get(conn, r["id"]) for r in rows) if b is not None]
    return [b for b in kb_repo.candidates_for(conn, p.user_id, p.org_id) if can_read(p, b)]


def resolve_collection(conn: psycopg.Connection, p: Principal, name: str, *, write: bool = False
                       ) -> list[KnowledgeBase]:
    """The bases holding ``name`` that the caller reaches; none reachable is "not found"."""
    bases = [b for b in kb_repo.by_collection(conn, name) if can_read(p, b) and (not write or can_write(p, b))]
    if not bases:
        raise CollectionNotFoundError()
    return bases
