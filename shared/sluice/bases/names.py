"""A collection name's claim (R-VEC-4): who may put a base on a name, and a derived name for a base
that names none."""

from __future__ import annotations

import re
import secrets

from sluice.access import can_write
from sluice.db import knowledge_bases as kb_repo
from sluice.db import name_locks
from sluice.db.connection import Connection
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import ConflictError, NameBusyError
from sluice.identity import Principal
from sluice.vectors import store as vector_store
from sluice.vectors.names import MAX_COLLECTION_CHARS

# How long a create waits for a write running on the name, and what its 409 asks to wait (R-TD-3).
CLAIM_WAIT_SECONDS = 1.0
CLAIM_RETRY_AFTER_SECONDS = 2


def derive_collection_name(display_name: str) -> str:
    """The display name as an identifier plus six random hex characters."""
    slug = re.sub(r"[^a-z0-9]+", "_", display_name.lower()).strip("_") or "collection"
    if slug[0].isdigit():
        slug = "c_" + slug
    slug = slug[: MAX_COLLECTION_CHARS - 7].rstrip("_")
    return f"{slug}_{secrets.token_hex(3)}"


def claim_name(conn: Connection, p: Principal, name: str) -> list[KnowledgeBase]:
    """Refuse a name that is not free for the caller (R-VEC-4); return the bases already on it.

    A name is free when every base holding it is one the caller may write (they
    could delete or clear them all anyway), no teardown has it reserved, and —
    when no base holds it — no unfiled content of another tenant sits under it
    (an app admin may adopt such content). The name's lock, taken exclusively,
    serialises claims (and teardowns) of one name until the claiming transaction
    ends, so two creators cannot both find it free; a chunk write running on the
    name holds it shared, and a claim waits for it only briefly before a 409 with
    a retry hint (R-TD-3): each waiting request holds a database connection.
    """
    if not name_locks.take(conn, name, wait_seconds=CLAIM_WAIT_SECONDS):
        raise NameBusyError("A write to this collection name is running; try again in a moment.",
                            retry_after=CLAIM_RETRY_AFTER_SECONDS)
    if kb_repo.teardown_reserved(conn, name):
        raise ConflictError(
            "This collection name is being torn down; try again shortly or choose another name.",
            fields={"collection_name": "This name is reserved by a teardown in progress."},
        )
    holders = kb_repo.by_collection(conn, name)
    taken = any(not can_write(p, h) for h in holders) if holders else (
        not p.is_app_admin and unfiled_content_holds(conn, name, p.org_id)
    )
    if taken:
        raise ConflictError(
            "This collection name is already taken.",
            fields={"collection_name": "This name is already taken; choose another."},
        )
    return holders


def unfiled_content_holds(conn: Connection, name: str, org_id: str | None) -> bool:
    """Whether content no base files sits under the name for another tenant (R-VEC-4): rows an
    operator's ingest (or a deleted base) left with no base, or chunks in the name's table."""
    return kb_repo.unfiled_rows_hold(conn, name, org_id) or vector_store.holds_chunks_outside(conn, name, org_id)
