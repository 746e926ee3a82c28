"""What bounds the sync side (issue 26, finding 12), against the real embedded PostgreSQL: how many
sources a base holds, and the schedule handing its due runs out one message each, tenants taking turns."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sluice.bases import CreateKnowledgeBase, create_base
from sluice.config import get_settings
from sluice.db import sync_runs as runs_repo
from sluice.db import sync_sources as sources_repo
from sluice.db.connection import transaction
from sluice.db.sync_runs import RunFile
from sluice.db.sync_sources import SyncSource
from sluice.errors import DocCapReachedError, ValidationError
from sluice.identity import Principal
from sluice.sync.context import SyncContext
from sluice.sync.retention import expire_run_files
from sluice.sync.runs import queue_due_runs, retry_failed, run_files, start_if_due
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
            collection_name=full.collection_name, kb_id=str(full.id)), settings=settings, vault=Vault()),
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


# --- old runs' file lists expire ------------------------------------------------------------------

def finished_run(conn, source: SyncSource, kb_id: uuid.UUID, collection: str, files: int, *, ago: timedelta
                 ) -> uuid.UUID:
    run = runs_repo.insert(conn, source_id=source.id, kb_id=kb_id, collection_name=collection, connector="s3",
                           sync_mode="new_only", trigger="manual", started_by="eda")
    runs_repo.add_files(conn, run.id, [
        RunFile(seq=i, batch=0, source_path=f"s3://team-docs/{i}.md", remote_key=f"{i}.md", name=f"{i}.md",
                etag="e", size=1, outcome="unchanged") for i in range(1, files + 1)])
    runs_repo.update(conn, run.id, status="succeeded", files_listed=files, files_unchanged=files,
                     finished_at=datetime.now(UTC))
    conn.execute("UPDATE sync_logs SET created_at = now() - %s WHERE id = %s", (ago, run.id))
    return run.id


def file_rows(conn) -> dict[uuid.UUID, int]:
    rows = conn.execute("SELECT run_id, count(*) AS n FROM sync_log_files GROUP BY run_id").fetchall()
    return {r["run_id"]: r["n"] for r in rows}


def test_the_reapers_sweep_keeps_the_file_lists_of_each_sources_latest_runs_only(db_url):
    settings = get_settings().model_copy(update={"sync_run_files_keep_runs": 2})
    with transaction() as conn:
        kb = create_base(conn, EDITOR, CreateKnowledgeBase(name="History", scope="org"))
        source, _ = create_source(conn, EDITOR, str(kb.id), body(1), settings=settings, vault=Vault())
        other, _ = create_source(conn, EDITOR, str(kb.id), body(2), settings=settings, vault=Vault())
        oldest, older, newer, newest = (finished_run(conn, source, kb.id, kb.collection_name, 3, ago=timedelta(days=d))
                                        for d in (4, 3, 2, 1))
        lone = finished_run(conn, other, kb.id, kb.collection_name, 2, ago=timedelta(days=9))
        going = runs_repo.insert(conn, source_id=other.id, kb_id=kb.id, collection_name=kb.collection_name,
                                 connector="s3", sync_mode="new_only", trigger="manual", started_by="eda").id
        runs_repo.add_files(conn, going, [RunFile(seq=1, batch=0, source_path="s3://team-docs/x.md",
                                                  remote_key="x.md", name="x.md", etag="e", size=1)])
    # WHEN the sweep runs (twice: the second finds nothing more to do)
    assert expire_run_files(transaction, settings) == 2
    assert expire_run_files(transaction, settings) == 0
    with transaction() as conn:
        left = file_rows(conn)
        expired = {r["id"]: r["files_expired_at"] is not None
                   for r in conn.execute("SELECT id, files_expired_at FROM sync_logs").fetchall()}
        kept = runs_repo.get(conn, oldest)
    # THEN the two oldest runs of the first source lost their file rows, and nothing else did
    assert left == {newer: 3, newest: 3, going: 1, lone: 2}
    assert expired == {oldest: True, older: True, newer: False, newest: False, going: False, lone: False}
    assert kept is not None and (kept.files_listed, kept.files_unchanged) == (3, 3)  # its totals stay
    # AND reading an expired run's files says why there are none; retrying its failures says so too
    with transaction() as conn:
        page = run_files(conn, EDITOR, str(oldest), limit=10, offset=0)
    assert page.files == [] and page.total == 0
    assert page.note == ("This run's file list was removed: a source keeps the file lists of its latest "
                         "SYNC_RUN_FILES_KEEP_RUNS runs. Its totals stay.")
    ctx = SyncContext(uow=transaction, store=None, settings=settings,  # type: ignore[arg-type]
                      connectors=None, executions=Started())  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as refused:
        retry_failed(ctx, EDITOR, str(oldest))
    assert refused.value.message == "This run's file list has expired; start a new run instead."
