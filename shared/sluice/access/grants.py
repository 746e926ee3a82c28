"""Grants on an organization base (R-ACC-1): one member widened to view or edit it."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sluice.access.resolve import resolve_base
from sluice.db import knowledge_bases as kb_repo
from sluice.db.connection import Connection
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import ValidationError
from sluice.identity import Principal


class GrantRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=200)
    permission: Literal["view", "edit"]


def grant_access(conn: Connection, p: Principal, kb_id: str, body: GrantRequest) -> KnowledgeBase:
    """Widen one organization base for one member; whoever may write the base may grant (R-ACC-1)."""
    kb = resolve_base(conn, p, kb_id, write=True, lock="update")
    if kb.scope != "org":
        raise ValidationError(
            "Only an organization knowledge base takes grants",
            fields={"user_id": "A personal base is its owner's only and an app-wide base is read by everyone; "
                               "grants widen an organization base."},
        )
    kb_repo.upsert_grant(conn, kb.id, body.user_id, body.permission, p.user_id)
    return replace(kb, grants={**kb.grants, body.user_id: body.permission})


def revoke_access(conn: Connection, p: Principal, kb_id: str, user_id: str) -> None:
    """Remove a member's grant on a base; removing one that is not there changes nothing."""
    kb = resolve_base(conn, p, kb_id, write=True, lock="update")
    kb_repo.delete_grant(conn, kb.id, user_id)
