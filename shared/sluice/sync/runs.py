"""Starting a run, handing out and starting the scheduled ones, retrying a run's failed files, and
reading runs back (R-SYNC-2).

The ``sync_logs`` row is committed first; the Step Functions execution is started after the
commit, so the execution always finds its row. One run at a time per source: a partial
unique index makes a second start conflict, answered 409 naming the run that is going. A run
whose execution ended without finishing (a timeout, an abort) no longer blocks the next.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psycopg

from sluice.admission import check_indexing_open
from sluice.db import knowledge_bases as kb_repo
from sluice.db import sync_runs as runs
from sluice.db import sync_sources as sources
from sluice.db.connection import Connection
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.db.sync_runs import Progress, RunFile, SyncRun
from sluice.db.sync_sources import SyncSource
from sluice.errors import CollectionNotFoundError, ConflictError, SluiceError, ValidationError
from sluice.identity import Principal
from sluice.sync.context import SyncContext
from sluice.sync.retention import EXPIRED_NOTE
from sluice.sync.schedule import due, due_at, fair_order, schedule_period, tenant_of
from sluice.sync.sources import get_source, parse_id, reachable_source

log = logging.getLogger("sluice.sync")
# A run still queued this long after its row was written never got its execution started.
STARTLESS = timedelta(minutes=5)
# What a run whose connector answered "nothing changed" (RemoteListing.unchanged) says: its zero counts
# are the answer, not a listing that found nothing.
NOTHING_CHANGED = ("Nothing changed since the last successful run: the source answered that what that run kept is "
                   "still current (for git, the ref still points at the same commit), so nothing was listed, "
                   "fetched or removed.")


def _stale(ctx: SyncContext, run: SyncRun) -> bool:
    """Whether an active run's execution is over without having finished it."""
    if run.execution_arn:
        status = ctx.executions.status(run.execution_arn) if ctx.executions else None
        return status is not None and status != "RUNNING"
    created = run.created_at or datetime.now(UTC)
    return datetime.now(UTC) - created > STARTLESS


def _open_run(ctx: SyncContext, conn: Connection, source: SyncSource, kb: KnowledgeBase, *, trigger: str,
              started_by: str, retry_of: uuid.UUID | None = None) -> SyncRun:
    active = runs.active_for_source(conn, source.id)
    if active is not None:
        if not _stale(ctx, active):
            raise _running(active)
        runs.update(conn, active.id, only_active=True, status="failed", finished_at=datetime.now(UTC),
                    error="The run's execution ended without finishing it; nothing was removed.")
    try:
        with conn.transaction():
            return runs.insert(conn, source_id=source.id, kb_id=kb.id, collection_name=kb.collection_name,
                               connector=source.connector, sync_mode=source.sync_mode, trigger=trigger,
                               started_by=started_by, retry_of=retry_of)
    except psycopg.errors.UniqueViolation:
        other = runs.active_for_source(conn, source.id)
        raise _running(other) from None


def _running(run: SyncRun | None) -> ConflictError:
    return ConflictError("A run of this source is already going; wait for it to finish.",
                         details={"run_id": str(run.id) if run else None})


def _launch(ctx: SyncContext, run: SyncRun) -> SyncRun:
    """Start the committed run's execution; a start that fails fails the run, in words."""
    if ctx.executions is None:
        raise RuntimeError("no state machine to start runs on (SYNC_STATE_MACHINE_ARN)")
    try:
        arn = ctx.executions.start(str(run.id))
    except Exception:
        log.exception("a sync run could not be started", extra={"run_id": str(run.id)})
        with ctx.uow() as conn:
            runs.update(conn, run.id, only_active=True, status="failed", finished_at=datetime.now(UTC),
                        error="The run could not be started; try again.")
        raise SluiceError("The run could not be started; try again. The service log has the details.") from None
    with ctx.uow() as conn:
        runs.update(conn, run.id, execution_arn=arn)
        found = runs.get(conn, run.id)
    assert found is not None
    return found


def _check_open(ctx: SyncContext, conn: Connection, kb: KnowledgeBase) -> None:
    check_indexing_open(ctx.settings, ctx.read_parameter)
    if kb_repo.teardown_reserved(conn, kb.collection_name):
        raise ConflictError("This collection is being torn down; nothing is synced into it.")


def start_run(ctx: SyncContext, p: Principal, kb_id: str, source_id: str) -> SyncRun:
    """A run started by a writer of the source's base (``POST .../run``)."""
    with ctx.uow() as conn:
        # The source's row lock: a change of its config or secret (which refuses while a run goes)
        # and a start are one after the other, never interleaved.
        source, kb = get_source(conn, p, kb_id, source_id, for_update=True)
        _check_open(ctx, conn, kb)
        run = _open_run(ctx, conn, source, kb, trigger="manual", started_by=p.user_id)
    return _launch(ctx, run)


def start_for_source(ctx: SyncContext, source_id: uuid.UUID, *, trigger: str, started_by: str) -> SyncRun:
    """A run started by the deployment itself (the schedule, an operator's CLI): no caller to check."""
    with ctx.uow() as conn:
        source = sources.get(conn, source_id, for_update=True)
        kb = kb_repo.get(conn, source.kb_id) if source else None
        if source is None or kb is None:
            raise CollectionNotFoundError()
        _check_open(ctx, conn, kb)
        run = _open_run(ctx, conn, source, kb, trigger=trigger, started_by=started_by)
    return _launch(ctx, run)


# --- scheduled runs: handed out one message each, then each started on its own ------------------

def queue_due_runs(ctx: SyncContext, now: datetime | None = None) -> list[uuid.UUID]:
    """Hand out a message per scheduled source whose period has passed, tenants taking turns
    (``fair_order``); returns the sources in the order queued. Starts nothing itself: one start
    that hangs or fails holds up no other, and the schedule's minute is spent on one query."""
    if ctx.due_queue is None:
        raise RuntimeError("no queue to hand due runs out on (SYNC_DUE_QUEUE_URL)")
    now = now or datetime.now(UTC)
    with ctx.uow() as conn:
        scheduled = sources.scheduled(conn)
    waiting: list[tuple[datetime, sources.Scheduled]] = []
    for item in scheduled:
        try:
            period = schedule_period(item.source.schedule or "")
        except ValueError:
            log.warning("a source's schedule is not a rate; skipped", extra={"source_id": str(item.source.id)})
            continue
        when = due_at(item.last_run_at, item.source.created_at, period, now)
        if not item.running and when <= now:
            waiting.append((when, item))
    waiting.sort(key=lambda w: (w[0], str(w[1].source.id)))
    ordered = fair_order([item for _, item in waiting], tenant=lambda i: tenant_of(i.scope, i.org_id, i.owner_id))
    ctx.due_queue.send_all([{"source_id": str(i.source.id), "as_of": now.isoformat()} for i in ordered])
    return [i.source.id for i in ordered]


def start_if_due(ctx: SyncContext, message: dict[str, object]) -> SyncRun | None:
    """Start the run a due message names, if it is still due as of when it was handed out (a run
    started since, by hand or by this same message delivered twice, makes it not due)."""
    source_id = parse_id(str(message.get("source_id")))
    try:
        as_of = datetime.fromisoformat(str(message.get("as_of")))
    except ValueError:
        as_of = datetime.now(UTC)
    if source_id is None:
        log.warning("a due message names no source; dropped")
        return None
    with ctx.uow() as conn:
        source = sources.get(conn, source_id)
        latest = runs.latest_for_source(conn, source_id) if source else None
    if source is None or source.schedule is None:
        return None  # deleted, or unscheduled, since it was handed out
    try:
        period = schedule_period(source.schedule)
    except ValueError:
        return None
    if (latest is not None and latest.active) or not due(latest.created_at if latest else None,
                                                        source.created_at, period, as_of):
        return None
    try:
        return start_for_source(ctx, source.id, trigger="schedule", started_by="schedule")
    except SluiceError as exc:
        log.info("a scheduled run was not started", extra={"source_id": str(source.id), "why": exc.code})
        return None


def retry_failed(ctx: SyncContext, p: Principal, run_id: str) -> SyncRun:
    """A run of exactly the files ``run_id`` failed, fetched whatever their change signal says."""
    with ctx.uow() as conn:
        run, source, kb = reachable_run(conn, p, run_id, for_update=True)
        if run.files_expired_at is not None:
            raise ValidationError("This run's file list has expired; start a new run instead.",
                                  fields={"run_id": "The run's file list was removed by the retention sweep."})
        if not runs.failed_paths(conn, run.id):
            raise ValidationError("This run has no failed files to retry.",
                                  fields={"run_id": "The run failed no file."})
        _check_open(ctx, conn, kb)
        retry = _open_run(ctx, conn, source, kb, trigger="retry", started_by=p.user_id, retry_of=run.id)
    return _launch(ctx, retry)


# --- reading -----------------------------------------------------------------------------------

def reachable_run(conn: Connection, p: Principal, run_id: str, *, for_update: bool = False
                  ) -> tuple[SyncRun, SyncSource, KnowledgeBase]:
    """A run of a source the caller manages (writes its base); otherwise "not found"."""
    ident = parse_id(run_id)
    run = runs.get(conn, ident) if ident else None
    if run is None:
        raise CollectionNotFoundError()
    source, kb = reachable_source(conn, p, run.source_id, for_update=for_update)
    return run, source, kb


@dataclass(frozen=True)
class RunState:
    run: SyncRun
    progress: Progress

    @property
    def note(self) -> str | None:
        """The run in words where its counts alone would mislead."""
        return NOTHING_CHANGED if self.run.unchanged else None


def run_state(conn: Connection, run: SyncRun) -> RunState:
    """A run with its counts: counted from its file rows while it goes, as recorded once done."""
    if run.active:
        return RunState(run, runs.progress(conn, run.id))
    return RunState(run, Progress(
        listed=run.files_listed, decided=run.files_listed, new=run.files_new, updated=run.files_updated,
        unchanged=run.files_unchanged, ignored=run.files_ignored, failed=run.files_failed,
        removed=run.files_removed, ingested=run.files_new + run.files_updated, pending=0))


def get_run(conn: Connection, p: Principal, run_id: str) -> RunState:
    run, _, _ = reachable_run(conn, p, run_id)
    return run_state(conn, run)


@dataclass(frozen=True)
class RunPage:
    runs: list[RunState]
    total: int
    limit: int
    offset: int


def list_runs(conn: Connection, p: Principal, kb_id: str, source_id: str, *, limit: int, offset: int) -> RunPage:
    """A source's own history, read by source id (a repointed source keeps its earlier runs)."""
    source, _ = get_source(conn, p, kb_id, source_id)
    found = runs.list_for_source(conn, source.id, limit=limit, offset=offset)
    return RunPage([run_state(conn, r) for r in found], runs.count_for_source(conn, source.id), limit, offset)


@dataclass(frozen=True)
class FilePage:
    run_id: uuid.UUID
    files: list[RunFile]
    total: int
    limit: int
    offset: int
    note: str | None = None  # why there are no files to show (the run's list expired)


def run_files(conn: Connection, p: Principal, run_id: str, *, limit: int, offset: int,
              outcome: str | None = None) -> FilePage:
    run, _, _ = reachable_run(conn, p, run_id)
    files, total = runs.files_page(conn, run.id, limit=limit, offset=offset, outcome=outcome)
    return FilePage(run.id, files, total, limit, offset, EXPIRED_NOTE if run.files_expired_at else None)
