"""Resolution of a named base or collection through its knowledge base rows (R-ACC-1, R-ACC-2).

The rule of who reaches a base lives here and nowhere else; the listing and
every per-resource route ask these functions. Every refusal is
``CollectionNotFoundError``: out of reach and absent are one answer, so the API
cannot be used to learn which names or ids exist.

Three scopes and no fourth (R-ACC-1):

=========  ============================================  ==============================================
scope      reads                                         writes
=========  ============================================  ==============================================
personal   its owner                                     its owner
org        ``collections:view`` (or ``:edit``) in its    ``collections:edit`` in its organization, or
           organization, or a grant                      an ``edit`` grant
app        anybody                                       app admins
=========  ============================================  ==============================================

An app admin is an admin of the app-wide bases only: a personal base is its
owner's private pool and an organization's bases are that organization's, so
neither is opened by the flag. A grant widens what the caller's permissions
allow on one organization base and never narrows it; it counts only for a
member of that base's organization, so a grant cannot carry a base across the
tenant boundary (nothing here knows another organization's users, so a grant
naming one is inert rather than a leak).

An organization's ``recipients`` base holds the documents shared into its
members' private pools (R-ACC-6, ``sluice.access.shared``). Nobody reads or
writes it as a base: each of its documents is reached by its recipients only,
so every base-level route answers "not found" for it, and a search reaches it
only through ``resolve_collection(..., shared=True)`` with a recipient check.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sluice.db import knowledge_bases as kb_repo
from sluice.db import recipients as recipient_repo
from sluice.db.connection import Connection
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import CollectionNotFoundError
from sluice.identity import Principal

# The scope of an organization's base of shared private documents: read per document, never whole.
RECIPIENTS = "recipients"


def _grant(p: Principal, kb: KnowledgeBase) -> str | None:
    if kb.scope != "org" or kb.org_id is None or kb.org_id != p.org_id:
        return None
    return kb.grants.get(p.user_id)


def can_read(p: Principal, kb: KnowledgeBase) -> bool:
    if kb.scope == RECIPIENTS:
        return False
    if kb.scope == "app":
        return True
    if kb.scope == "personal":
        return kb.owner_id == p.user_id
    if kb.org_id is None or kb.org_id != p.org_id:
        return False
    return p.can("collections:view") or p.can("collections:edit") or _grant(p, kb) is not None


def can_write(p: Principal, kb: KnowledgeBase) -> bool:
    if kb.scope == RECIPIENTS:
        return False
    if kb.scope == "app":
        return p.is_app_admin
    if kb.scope == "personal":
        return kb.owner_id == p.user_id
    if kb.org_id is None or kb.org_id != p.org_id:
        return False
    return p.can("collections:edit") or _grant(p, kb) == "edit"


def _check(p: Principal, kb: KnowledgeBase | None, write: bool) -> KnowledgeBase:
    if kb is None or not can_read(p, kb) or (write and not can_write(p, kb)):
        raise CollectionNotFoundError()
    return kb


def resolve_base(conn: Connection, p: Principal, kb_id: str | uuid.UUID, *, write: bool = False,
                 lock: str | None = None) -> KnowledgeBase:
    """The base ``kb_id`` if the caller reaches it (writes it, with ``write``); otherwise "not found"."""
    try:
        ident = kb_id if isinstance(kb_id, uuid.UUID) else uuid.UUID(str(kb_id))
    except ValueError:
        raise CollectionNotFoundError() from None
    return _check(p, kb_repo.get(conn, ident, lock=lock), write)


def readable_bases(conn: Connection, p: Principal) -> list[KnowledgeBase]:
    """Every base the caller reads, oldest first."""
    return [b for b in kb_repo.candidates_for(conn, p.user_id, p.org_id) if can_read(p, b)]


def receives_from(conn: Connection, p: Principal, kb: KnowledgeBase) -> bool:
    """Whether ``kb`` is a recipients base of the caller's organization holding a document shared with them."""
    return (kb.scope == RECIPIENTS and p.org_id is not None and kb.org_id == p.org_id
            and recipient_repo.receives_in(conn, kb.id, p.user_id, p.org_id))


def resolve_collection(conn: Connection, p: Principal, name: str, *, write: bool = False, shared: bool = False
                       ) -> list[KnowledgeBase]:
    """The bases holding ``name`` that the caller reaches, oldest first; none reachable is "not found".

    A name is looked up as typed: an invalid name is held by no base, so it is
    "not found" like any other absent one rather than a different answer.
    ``shared`` (a search's reading): a recipients base holding a document shared
    with the caller is reached too; the caller must then scope it to those
    documents (``sluice.access.shared.search_scope``).
    """
    if not isinstance(name, str) or not name:
        raise CollectionNotFoundError()
    bases = [b for b in kb_repo.by_collection(conn, name)
             if (can_read(p, b) and (not write or can_write(p, b)))
             or (shared and not write and receives_from(conn, p, b))]
    if not bases:
        raise CollectionNotFoundError()
    return bases


@dataclass(frozen=True)
class ReachableCollection:
    """One collection name as the caller sees it: the bases on it they reach, oldest first."""

    name: str
    bases: tuple[KnowledgeBase, ...]


def reachable_collections(conn: Connection, p: Principal) -> list[ReachableCollection]:
    """Each collection name the caller reaches, once, with the reachable bases holding it."""
    grouped: dict[str, list[KnowledgeBase]] = {}
    for kb in readable_bases(conn, p):
        grouped.setdefault(kb.collection_name, []).append(kb)
    return [ReachableCollection(name, tuple(bases)) for name, bases in sorted(grouped.items())]
