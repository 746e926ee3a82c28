"""A teardown's receipt: what it was asked to remove, where it is, why it failed, and what it
removed. The same dictionary is the body of ``GET /rag/teardowns/{id}`` and the structured log
line the release writes, so what a user reads and what the operator's log keeps agree.

Who may read it: the one who asked for it, and whoever could write one of its bases as they
were (their rows are gone; the receipt keeps their scope, organization, owner and grants).
Anyone else gets the answer an absent teardown gets, which is the answer every route gives for a
collection out of reach (R-ACC-2): a receipt is its collection's, and says no more about it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sluice.access import can_write
from sluice.db import teardowns as td_repo
from sluice.db.connection import Connection
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.db.teardowns import Teardown
from sluice.errors import CollectionNotFoundError
from sluice.identity import Principal


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def summary(td: Teardown) -> dict[str, Any]:
    """The receipt as plain JSON values."""
    return {
        "id": str(td.id),
        "collection_name": td.collection_name,
        "state": td.state,
        "step": td.step,
        "knowledge_bases": [{"id": b["id"], "name": b["name"], "scope": b["scope"],
                             "action": "cleared" if b.get("is_default") else "deleted"} for b in td.bases],
        "table": "drop" if td.drop_table else "keep",
        "table_dropped": td.table_dropped,
        "requested_by": td.requested_by,
        "requested_at": _iso(td.created_at),
        "updated_at": _iso(td.updated_at),
        "finished_at": _iso(td.finished_at),
        "attempts": td.attempts,
        "error": {"step": td.failed_step or td.step, "reason": td.last_error or ""} if td.state == "failed" else None,
        "removed": {"documents": td.documents_removed, "chunks": td.chunks_removed, "objects": td.objects_removed,
                    "bytes": td.bytes_removed, "sync_sources": td.sync_sources_removed},
        "unfiled_documents_failed": td.unfiled_documents_failed,
        "left": td.left_over,
        "history": td.history,
    }


def _as_base(snapshot: dict[str, Any]) -> KnowledgeBase:
    return KnowledgeBase(
        id=uuid.UUID(snapshot["id"]), name=snapshot["name"], collection_name="", scope=snapshot["scope"],
        owner_id=snapshot.get("owner_id"), org_id=snapshot.get("org_id"), is_default=bool(snapshot.get("is_default")),
        description="", embedding_provider="", embedding_model="", embedding_dim=1, embedding_base_url=None,
        embedding_secret_id=None, ingestion_config={}, created_by="", grants=dict(snapshot.get("grants") or {}),
    )


def can_read(p: Principal, td: Teardown) -> bool:
    return td.requested_by == p.user_id or any(can_write(p, _as_base(b)) for b in td.bases)


def get_receipt(conn: Connection, p: Principal, teardown_id: str) -> Teardown:
    try:
        ident = uuid.UUID(teardown_id)
    except ValueError:
        raise CollectionNotFoundError() from None
    td = td_repo.get(conn, ident)
    if td is None or not can_read(p, td):
        raise CollectionNotFoundError()
    return td
