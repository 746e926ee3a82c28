"""What bounds the sync side (issue 26, finding 12), against the real embedded PostgreSQL: how many
sources a base holds."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from sluice.access.bases import CreateKnowledgeBase, create_base
from sluice.config import get_settings
from sluice.db.connection import transaction
from sluice.errors import DocCapReachedError
from sluice.identity import Principal
from sluice.sync.sources import (
    CloneSyncSource,
    CreateSyncSource,
    RepointSyncSource,
    clone_source,
    create_source,
    repoint_source,
)

EDITOR = Principal(user_id="eda", org_id="acme", is_app_admin=False,
                   permissions=frozenset({"collections:view", "collections:edit", "secrets:view"}))
SECRET = "team-docs-reader"  # noqa: S105 - a secret's name


class Vault:
    def tags_of(self, secret_id: str) -> Mapping[str, str] | None:
        return {"sluice:provider": "aws_credentials", "sluice:org_id": "acme"} if secret_id == SECRET else None


def body(n: int) -> CreateSyncSource:
    return CreateSyncSource(name=f"docs {n}", connector="s3", config={"bucket": "team-docs", "prefix": f"{n}/"},
                            secret_id=SECRET)


def test_a_base_holds_at_most_the_configured_number_of_sources(db_url):
    settings = get_settings().model_copy(update={"sync_max_sources_per_base": 2})
    with transaction() as conn:
        full = create_base(conn, EDITOR, CreateKnowledgeBase(name="Full", scope="org"))
        roomy = create_base(conn, EDITOR, CreateKnowledgeBase(name="Roomy", scope="org"))
        for n in range(2):
            create_source(conn, EDITOR, str(full.id), body(n), settings=settings, vault=Vault())
        elsewhere, _ = create_source(conn, EDITOR, str(roomy.id), body(9), settings=settings, vault=Vault())
    # a third source, by creation, by a clone into the base or by a repoint into it, is refused
    attempts = {
        "create": lambda conn: create_source(conn, EDITOR, str(full.id), body(2), settings=settings, vault=Vault()),
        "clone": lambda conn: clone_source(conn, EDITOR, str(elsewhere.id), CloneSyncSource(kb_id=str(full.id)),
                                           settings=settings, vault=Vault()),
        "repoint": lambda conn: repoint_source(conn, EDITOR, str(elsewhere.id), RepointSyncSource(
            collection_name=full.collection_name, kb_id=str(full.id)), settings=settings),
    }
    for how, attempt in attempts.items():
        with pytest.raises(DocCapReachedError) as refused, transaction() as conn:
            attempt(conn)
        assert refused.value.status == 409 and refused.value.code == "DOC_CAP_REACHED", how
        assert refused.value.message == (
            "This knowledge base already has 2 sync sources, the most a base may have "
            "(SYNC_MAX_SOURCES_PER_BASE); delete one to add another."), how
        assert refused.value.details == {"cap": 2, "held": 2}, how
    with transaction() as conn:
        held = conn.execute("SELECT kb_id, count(*) AS n FROM sync_sources WHERE kb_id IN (%s, %s) GROUP BY kb_id",
                            (full.id, roomy.id)).fetchall()
    assert {r["kb_id"]: r["n"] for r in held} == {full.id: 2, roomy.id: 1}
