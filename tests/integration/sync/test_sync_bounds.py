"""What bounds the sync side (issue 26, finding 12), against the real embedded PostgreSQL: how many
sources a base holds, and the schedule handing its due runs out one message each, tenants taking turns."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sluice.access.bases import CreateKnowledgeBase, create_base
from sluice.config import get_settings
from sluice.db import sync_sources as sources_repo
from sluice.db.connection import transaction
from sluice.db.sync_sources import SyncSource
from sluice.errors import DocCapReachedError
from sluice.identity import Principal
from sluice.sync.context import SyncContext
from sluice.sync.runs import queue_due_runs, start_if_due
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


# --- the schedule hands its due runs out, one message each ------------------------------------------

@dataclass
class Sent:
    messages: list[dict[str, Any]] = field(default_factory=list)

    def send_all(self, messages: list[dict[str, Any]]) -> None:
        self.messages += messages


@dataclass
class Started:
    runs: list[str] = field(default_factory=list)

    def start(self, run_id: str) -> str:
        self.runs.append(run_id)
        return f"arn:aws:states:us-east-1:123456789012:execution:sync:run-{run_id}"

    def status(self, execution_arn: str) -> str | None:
        return "RUNNING"


def scheduled_source(conn, kb_id: uuid.UUID, name: str, *, age: timedelta) -> uuid.UUID:
    created = sources_repo.insert(conn, SyncSource(
        id=uuid.uuid4(), kb_id=kb_id, name=name, connector="s3", config={"bucket": "team-docs"},
        secret_id=SECRET, sync_mode="new_only", organizational_unit=None, schedule="rate(1 hour)",
        created_by="eda"))
    conn.execute("UPDATE sync_sources SET created_at = now() - %s WHERE id = %s", (age, created.id))
    return created.id


def test_the_schedule_hands_each_due_run_out_as_a_message_taking_turns_across_tenants(db_url):
    other = Principal(user_id="gil", org_id="globex", is_app_admin=False,
                      permissions=frozenset({"collections:view", "collections:edit"}))
    with transaction() as conn:
        acme = create_base(conn, EDITOR, CreateKnowledgeBase(name="Acme docs", scope="org"))
        globex = create_base(conn, other, CreateKnowledgeBase(name="Globex docs", scope="org"))
        # acme's five due sources were due longest; globex's one came due last
        busy = [scheduled_source(conn, acme.id, f"acme {i}", age=timedelta(hours=5 - i * 0.1)) for i in range(5)]
        late = scheduled_source(conn, globex.id, "globex", age=timedelta(hours=1, minutes=1))
        scheduled_source(conn, globex.id, "not yet", age=timedelta(minutes=20))
    queue, executions = Sent(), Started()
    ctx = SyncContext(uow=transaction, store=None, settings=get_settings(),  # type: ignore[arg-type]
                      connectors=None, executions=executions, due_queue=queue)  # type: ignore[arg-type]
    now = datetime.now(UTC)
    queued = queue_due_runs(ctx, now)
    # one message per due source, none for the one not due, and no run started by the schedule itself
    assert [m["source_id"] for m in queue.messages] == [str(s) for s in queued]
    assert queued == [busy[0], late, *busy[1:]]  # globex's one is second in line, not sixth
    assert all(m["as_of"] == now.isoformat() for m in queue.messages)
    assert executions.runs == []
    # each message starts its run; the same message delivered again starts nothing more
    for message in queue.messages:
        assert start_if_due(ctx, message) is not None
    for message in queue.messages:
        assert start_if_due(ctx, message) is None
    with transaction() as conn:
        started = conn.execute("SELECT source_id, trigger FROM sync_logs").fetchall()
    assert sorted(str(r["source_id"]) for r in started) == sorted(str(s) for s in queued)
    assert {r["trigger"] for r in started} == {"schedule"} and len(executions.runs) == 6

