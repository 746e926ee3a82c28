"""The steps of a run, each a Step Functions task of ``infra/statemachines/sync.asl.json``.

``list`` reads the whole listing (paged, at most SYNC_MAX_KEYS_PER_RUN files, and says whether
it is whole: one cut by that cap is not) into the run's file rows and answers the batches;
the Map runs ``batch`` on each (decide by the change signal, else fetch and decide by the
content hash, hand what changed to the ordinary pipeline);
``await`` watches the pipeline until every handed-over document is indexed or failed;
``reconcile`` removes the documents this source no longer lists - only after a whole listing,
and only those no other source claims; ``finish`` writes the totals. ``batch_failed`` and
``fail`` are the Catch paths: they record what stopped, in words, and remove nothing.

Every step is idempotent, so a Retry of a task that failed half-way does no harm: the
listing is rewritten whole, and a batch decides only the files still undecided.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from pydantic import ValidationError as PydanticValidationError

from sluice.admission import check_indexing_open, sync_deferred
from sluice.db import document_claims as claims
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db import sync_journal as journal
from sluice.db import sync_runs as runs
from sluice.db import sync_sources as sources
from sluice.db.connection import Connection
from sluice.db.document_claims import Claim
from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.db.sync_runs import Outcome, RunFile, SyncRun
from sluice.db.sync_sources import SyncSource
from sluice.errors import SluiceError
from sluice.ingest.families import kb_family_by_name
from sluice.ingest.retire import delete_row_and_chunks, forget_objects
from sluice.storage import display_name
from sluice.sync.connectors import CONNECTORS, Connector, RemoteFile, SourceRefused
from sluice.sync.context import SyncContext
from sluice.sync.handoff import HandOffRefused, hand_off
from sluice.sync.planning import FileFacts, Move, Skip, decide_after, decide_before
from sluice.sync.remote_names import RemoteNameRefused, remote_name
from sluice.vectors import store as vector_store

log = logging.getLogger("sluice.sync")
T = TypeVar("T")

GONE = "The document was deleted while it was being indexed."
UNKNOWN_FAILURE = "The document could not be indexed."
UNDECIDED = "The run stopped before this file was decided; the next run looks at it again."
RECONCILE_PAGE = 200


class SyncTaskError(Exception):
    """A task the state machine was given cannot be done (an unknown task, no run id)."""


def run_task(ctx: SyncContext, event: dict[str, Any]) -> dict[str, Any]:
    """One Step Functions task: ``{"task": ..., "run_id": ...}`` and what that task takes."""
    task = TASKS.get(str(event.get("task")))
    if task is None:
        raise SyncTaskError(f"unknown sync task {event.get('task')!r}")
    try:
        run_id = uuid.UUID(str(event.get("run_id")))
    except ValueError:
        raise SyncTaskError("a sync task needs the run_id of its run") from None
    return task(ctx, run_id, event)


# --- list ----------------------------------------------------------------------------------------

def _fail_run(ctx: SyncContext, run_id: uuid.UUID, reason: str) -> dict[str, Any]:
    with ctx.uow() as conn:
        runs.update(conn, run_id, only_active=True, error=reason, listing_complete=False)
    return {"batches": [], "more": False}


def _load(conn: Connection, run_id: uuid.UUID) -> tuple[SyncRun | None, SyncSource | None, KnowledgeBase | None]:
    run = runs.get(conn, run_id)
    if run is None:
        return None, None, None
    return run, sources.get(conn, run.source_id), kb_repo.get(conn, run.kb_id)


class _Journal:
    """The run's listing journal in the database: each append is its own transaction."""

    def __init__(self, ctx: SyncContext, run_id: uuid.UUID) -> None:
        self.ctx, self.run_id = ctx, run_id

    def entries(self) -> list[dict[str, Any]]:
        with self.ctx.uow() as conn:
            return journal.read(conn, self.run_id)

    def append(self, entries: list[dict[str, Any]]) -> None:
        with self.ctx.uow() as conn:
            journal.append(conn, self.run_id, entries)


def _count_transfer(ctx: SyncContext, run_id: uuid.UUID, connector: Connector) -> None:
    moved = connector.transfer()
    if moved is not None and any(moved):
        with ctx.uow() as conn:
            runs.add_transfer(conn, run_id, *moved)


def list_files(ctx: SyncContext, run_id: uuid.UUID, event: dict[str, Any]) -> dict[str, Any]:
    """The listing, or one bounded step of it: ``more`` says the state machine runs this task again
    (a crawl longer than one function's time), which goes on from the run's journal."""
    with ctx.uow() as conn:
        run, source, kb = _load(conn, run_id)
        if run is None or not run.active:
            return {"batches": [], "more": False}
        runs.update(conn, run_id, status="running", started_at=run.started_at or datetime.now(UTC))
    if source is None or kb is None or source.kb_id != run.kb_id:
        return _fail_run(ctx, run_id, "The source was deleted or moved to another base before the run began.")
    try:
        check_indexing_open(ctx.settings, ctx.read_parameter)
    except SluiceError as exc:
        return _fail_run(ctx, run_id, f"{exc.message} The run did nothing.")
    try:
        connector = ctx.connectors.open(source, kb)
    except SourceRefused as exc:
        return _fail_run(ctx, run_id, str(exc))
    except PydanticValidationError:
        return _fail_run(ctx, run_id, "The source's configuration is no longer valid; correct it and run again.")
    try:
        listing = connector.list_step(ctx.settings.sync_max_keys_per_run, _Journal(ctx, run_id))
    finally:
        _count_transfer(ctx, run_id, connector)
    if listing is None:
        log.info("listed part of the source; the next step goes on", extra={"run_id": str(run_id)})
        return {"batches": [], "more": True}
    only: set[str] | None = None
    if run.trigger == "retry" and run.retry_of is not None:
        with ctx.uow() as conn:
            only = runs.failed_paths(conn, run.retry_of)
    rows = _rows(ctx, [f for f in listing.files if only is None or f.source_path in only])
    with ctx.uow() as conn:
        runs.clear_files(conn, run_id)  # a retried task starts the listing over
        runs.add_files(conn, run_id, rows)
        # A state kept at once (a crawl's validators) is not kept twice, on the run as well.
        runs.update(conn, run_id, listing_complete=listing.complete, files_listed=len(rows),
                    error=None if listing.complete else listing.problem, unchanged=listing.unchanged,
                    connector_state=None if listing.keep_state_now else listing.state)
        if listing.keep_state_now and listing.state is not None and run.trigger != "retry":
            sources.keep_connector_state(conn, source.id, listing.state)
        journal.clear(conn, run_id)
    batches = sorted({r.batch for r in rows if r.outcome is None})
    log.info("listed", extra={"run_id": str(run_id), "files": len(rows), "complete": listing.complete,
                              "batches": len(batches), "markers_skipped": listing.markers_skipped})
    return {"batches": [{"run_id": str(run_id), "batch": b} for b in batches], "complete": listing.complete,
            "more": False}


# A Map's items travel in the execution's state (at most 256 KB) and each iteration adds events to
# its history (at most 25,000): past this many batches, batches grow instead of multiplying.
MAX_BATCHES = 1000


def _rows(ctx: SyncContext, files: list[RemoteFile]) -> list[RunFile]:
    """Each listed file as a row, in batches bounded by count and bytes; a refused name is decided now."""
    limit_files = max(1, ctx.settings.sync_batch_files, -(-len(files) // MAX_BATCHES))
    # Bytes split a batch only while the count of batches leaves room for it.
    limit_bytes = (max(1, ctx.settings.sync_batch_mb) * 1024 * 1024 if limit_files == ctx.settings.sync_batch_files
                   else 1 << 62)
    now = datetime.now(UTC)
    rows: list[RunFile] = []
    batch, in_batch, bytes_in_batch = 0, 0, 0
    for seq, f in enumerate(files, start=1):
        try:
            name, outcome, reason = remote_name(f.key), None, None
        except RemoteNameRefused as exc:
            name, outcome, reason = (f.key.rstrip("/").rsplit("/", 1)[-1] or f.key)[-255:] or "/", "failed", str(exc)
        if outcome is None and f.failure:
            outcome, reason = "failed", f.failure
        if outcome is None and f.note:
            outcome, reason = "ignored", f.note
        if outcome is None:
            if in_batch and (in_batch >= limit_files or bytes_in_batch + f.size > limit_bytes):
                batch, in_batch, bytes_in_batch = batch + 1, 0, 0
            in_batch += 1
            bytes_in_batch += f.size
        rows.append(RunFile(seq=seq, batch=batch, source_path=f.source_path, remote_key=f.key,
                            name=name.replace("\x00", ""), etag=f.etag, size=f.size, outcome=outcome,
                            reason=reason if outcome else f.hint, decided_at=now if outcome else None))
    return rows


# --- batch ---------------------------------------------------------------------------------------

def _answer(ctx: SyncContext, what: str, ask: Callable[[Connection], T], default: T) -> T:
    """A lookup that cannot answer is "no match", never "present" (R-SYNC-3)."""
    try:
        with ctx.uow() as conn:
            return ask(conn)
    except psycopg.Error:
        log.warning("a matching lookup could not be answered; treated as no match", exc_info=True,
                    extra={"lookup": what})
        return default


def _gather(ctx: SyncContext, run: SyncRun, source: SyncSource, kb: KnowledgeBase, files: list[RunFile]
            ) -> dict[int, FileFacts]:
    paths = [f.source_path for f in files]
    no_claims: dict[str, list[Claim]] = {}
    no_documents: dict[str, list[Document]] = {}
    claimed = _answer(ctx, "claims", lambda c: claims.claims_at(c, source.id, kb.id, paths), no_claims)
    at = _answer(ctx, "address", lambda c: claims.by_addresses(c, kb.id, paths), no_documents)
    names = sorted({display_name(f.name) for f in files})
    named = _answer(ctx, "name", lambda c: claims.unaddressed_by_names(c, kb.id, names), no_documents)
    # A rename, where the signal names the content: asked only for files new at their address, and only
    # when the listing was whole (an address a cut listing did not reach has not gone anywhere).
    kind = CONNECTORS.get(source.connector)
    renamed = [f.etag for f in files if f.etag and kind is not None and kind.content_id(f.etag)
               and not claimed.get(f.source_path) and not at.get(f.source_path)]
    moved = no_claims
    if renamed and run.listing_complete and run.trigger != "retry":
        moved = _answer(ctx, "renamed", lambda c: claims.left_behind(c, source.id, kb.id, run.id, renamed), no_claims)
    return {f.seq: FileFacts(f, claimed.get(f.source_path, []), at.get(f.source_path, []),
                             named.get(display_name(f.name), []), moved.get(f.etag or "", []))
            for f in files}


def _refused_before_download(ctx: SyncContext, f: RunFile) -> Outcome | None:
    if f.size is not None and f.size > ctx.settings.max_upload_bytes:
        return Outcome(f.seq, "failed", f"The file is larger than the {ctx.settings.max_upload_size_mb} MB limit "
                                        "for knowledge-base documents; it was not fetched.")
    try:
        kb_family_by_name(f.name)
    except SluiceError as exc:
        return Outcome(f.seq, "ignored", f"{exc.message} It was not fetched.")
    return None


def process_batch(ctx: SyncContext, run_id: uuid.UUID, event: dict[str, Any]) -> dict[str, Any]:
    batch = int(event.get("batch", -2))
    with ctx.uow() as conn:
        run, source, kb = _load(conn, run_id)
        files = runs.batch_files(conn, run_id, batch) if run is not None else []
    todo = [f for f in files if f.outcome is None]
    if run is None or not run.active or not todo:
        return {"batch": batch, "decided": 0}
    if source is None or kb is None or source.kb_id != run.kb_id:
        with ctx.uow() as conn:
            runs.fail_undecided(conn, run_id, "The source was deleted or moved during the run.", batch)
        return {"batch": batch, "decided": len(todo)}
    forced = run.trigger == "retry"
    decided: list[Outcome] = []
    confirmed: list[tuple[RunFile, Document]] = []
    fetches: list[tuple[RunFile, Document | None]] = []
    candidates = []
    for f in todo:
        refused = _refused_before_download(ctx, f)
        if refused is not None:
            decided.append(refused)
        else:
            candidates.append(f)
    facts = _gather(ctx, run, source, kb, candidates)
    for f in candidates:
        decision = decide_before(facts[f.seq], run.sync_mode, forced=forced)
        if isinstance(decision, Move):
            moved = _move(ctx, source, kb, f, decision)
            if moved is None:
                fetches.append((f, None))  # taken by another file of the run meanwhile: this one is new
            else:
                decided.append(moved)
        elif isinstance(decision, Skip):
            doc = decision.document
            reason = decision.reason or (f.reason if decision.outcome == "unchanged" else None)
            decided.append(Outcome(f.seq, decision.outcome, reason, doc.id if doc else None))
            if decision.outcome == "unchanged" and doc is not None:
                confirmed.append((f, doc))
        else:
            fetches.append((f, decision.current))
    with ctx.uow() as conn:
        for f, doc in confirmed:
            claims.claim(conn, source.id, doc.id, f.source_path, f.etag, f.size)
        runs.record(conn, run_id, decided)
    if fetches:
        _fetch_all(ctx, run, source, kb, fetches)
    return {"batch": batch, "decided": len(todo), "fetched": len(fetches)}


def _move(ctx: SyncContext, source: SyncSource, kb: KnowledgeBase, f: RunFile, move: Move) -> Outcome | None:
    """Readdress the renamed file's document, its chunks kept; None when it is no longer where the lookup
    saw it (another file of this run took it), is an archive, or another source still lists it."""
    old = move.claim.source_path
    with ctx.uow() as conn:
        doc_repo.lock_address(conn, kb.id, f.source_path)
        doc = doc_repo.get(conn, move.claim.document.id, for_update=True)
        if (doc is None or doc.status != "done" or doc.source_path != old
                or doc_repo.by_address(conn, kb.id, f.source_path) or claims.claimants(conn, doc.id) != [source.id]
                or doc_repo.archive_members(conn, kb.id, old)):
            return None
        name = display_name(f.name)
        doc_repo.readdress(conn, doc.id, source_path=f.source_path, filename=name, source_etag=f.etag)
        vector_store.readdress_document_chunks(conn, kb.collection_name, doc.id, source_path=f.source_path,
                                               filename=name)
        claims.claim(conn, source.id, doc.id, f.source_path, f.etag, f.size)
    return Outcome(f.seq, "unchanged", move.reason(), doc.id)


def _fetch_all(ctx: SyncContext, run: SyncRun, source: SyncSource, kb: KnowledgeBase,
               fetches: list[tuple[RunFile, Document | None]]) -> None:
    try:
        connector = ctx.connectors.open(source, kb)
    except (SourceRefused, PydanticValidationError) as exc:
        reason = str(exc) if isinstance(exc, SourceRefused) else "The source's configuration is not valid."
        with ctx.uow() as conn:
            runs.record(conn, run.id, [Outcome(f.seq, "failed", reason) for f, _ in fetches])
        return
    try:
        _fetch_each(ctx, connector, run, source, kb, fetches)
    finally:
        _count_transfer(ctx, run.id, connector)


def _fetch_each(ctx: SyncContext, connector: Connector, run: SyncRun, source: SyncSource, kb: KnowledgeBase,
                fetches: list[tuple[RunFile, Document | None]]) -> None:
    with tempfile.TemporaryDirectory(prefix="sluice-sync-") as tmp:
        for f, current in fetches:
            try:
                outcome = _fetch_one(ctx, connector, run, source, kb, f, current, Path(tmp))
            except psycopg.Error:
                raise  # the database is the run's own; the state machine retries the batch
            except Exception as exc:
                log.exception("a synced file failed", extra={"run_id": str(run.id)})
                outcome = Outcome(f.seq, "failed", f"The file could not be synced ({type(exc).__name__}); "
                                                   "the next run tries again.")
            with ctx.uow() as conn:
                runs.record(conn, run.id, [outcome])


def _fetch_one(ctx: SyncContext, connector: Connector, run: SyncRun, source: SyncSource, kb: KnowledgeBase,
               f: RunFile, current: Document | None, tmp: Path) -> Outcome:
    # A directory of its own per file: two files of one name in different folders never share a path.
    # A private pool whose owner's upload limits are spent: not fetched, reported, taken by the next run.
    deferred = _answer(ctx, "upload limits", lambda c: sync_deferred(c, kb, ctx.settings), None)
    if deferred is not None:
        return Outcome(f.seq, "failed", deferred)
    workdir = Path(tempfile.mkdtemp(dir=tmp))
    limit = ctx.settings.max_upload_bytes
    try:
        path = connector.fetch(RemoteFile(f.remote_key, f.source_path, f.size or 0, f.etag), workdir, limit)
    except RemoteNameRefused as exc:
        return Outcome(f.seq, "failed", str(exc))
    except Exception as exc:
        what = connector.describe_failure(exc)
        log.warning("a file could not be fetched", exc_info=exc, extra={"run_id": str(run.id), "code": what})
        if what in ("PreconditionFailed", "412"):
            return Outcome(f.seq, "failed", "The file changed while the run was reading it; the next run takes "
                                            "the new version.")
        return Outcome(f.seq, "failed", f"The file could not be downloaded ({what}); the next run tries again.")
    try:
        data = path.read_bytes()
    finally:
        path.unlink(missing_ok=True)
    if len(data) > limit:
        return Outcome(f.seq, "failed", f"The file is larger than the {ctx.settings.max_upload_size_mb} MB limit "
                                        "for knowledge-base documents.")
    digest = hashlib.sha256(data).hexdigest()
    same = None
    if current is None:
        same = _answer(ctx, "content", lambda c: claims.by_content(c, kb.id, digest, f.source_path), None)
    decision = decide_after(current, digest, same, run.sync_mode)
    if isinstance(decision, Skip):
        assert decision.document is not None
        with ctx.uow() as conn:
            claims.claim(conn, source.id, decision.document.id, f.source_path, f.etag, f.size)
        return Outcome(f.seq, "unchanged", None, decision.document.id)
    try:
        handed = hand_off(ctx, source, kb, f, data, digest, decision.replaces)
    except HandOffRefused as exc:
        return Outcome(f.seq, "failed", str(exc))
    return Outcome(f.seq, decision.outcome, None, handed.document.id, pending=True)


def batch_failed(ctx: SyncContext, run_id: uuid.UUID, event: dict[str, Any]) -> dict[str, Any]:
    """The Map's Catch: a batch whose task kept failing; its undecided files say so."""
    name = _error_name(event)
    with ctx.uow() as conn:
        n = runs.fail_undecided(conn, run_id, f"The worker deciding this file failed ({name}); the next run "
                                               "looks at it again.", int(event.get("batch", -2)))
    return {"batch": event.get("batch"), "failed": n}


# --- await, reconcile, finish ------------------------------------------------------------------------

def await_ingestion(ctx: SyncContext, run_id: uuid.UUID, event: dict[str, Any]) -> dict[str, Any]:
    """Settle the files whose documents are indexed or failed; answer how many are still indexing.

    Watches for up to SYNC_AWAIT_SECONDS before answering, so a short run needs no wait
    state; the state machine waits SYNC_WAIT_SECONDS between answers that are not zero.
    """
    until = time.monotonic() + max(0, ctx.settings.sync_await_seconds)
    while True:
        with ctx.uow() as conn:
            run = runs.get(conn, run_id)
            if run is None or not run.active:
                return {"pending": 0, "wait_seconds": 0}
            pending = runs.settle_pending(conn, run_id, gone=GONE, unknown_failure=UNKNOWN_FAILURE)
            started = run.started_at or run.created_at or datetime.now(UTC)
            if pending and datetime.now(UTC) - started > timedelta(seconds=ctx.settings.sync_ingest_timeout_seconds):
                runs.fail_pending(conn, run_id, "Still being indexed when the run stopped waiting; the next run "
                                                "looks at it again.")
                pending = 0
        if pending == 0 or time.monotonic() >= until:
            return {"pending": pending, "wait_seconds": max(1, ctx.settings.sync_wait_seconds)}
        time.sleep(0.5)


def reconcile(ctx: SyncContext, run_id: uuid.UUID, event: dict[str, Any]) -> dict[str, Any]:
    """Remove what this source no longer lists: after a whole listing only, and only documents no
    other source claims (a source that stops listing a document drops its claim)."""
    with ctx.uow() as conn:
        run = runs.get(conn, run_id)
    if run is None or not run.active:
        return {"removed": 0}
    if run.unchanged:
        return {"removed": 0, "skipped": "nothing changed"}
    if run.trigger == "retry" or not run.listing_complete or run.error:
        return {"removed": 0, "skipped": "the listing was not whole" if not run.listing_complete else run.trigger}
    removed = 0
    while True:
        gone: list[Document] = []
        with ctx.uow() as conn:
            page = claims.unlisted(conn, run.source_id, run_id, limit=RECONCILE_PAGE)
            if not page:
                break
            rows: list[tuple[str, uuid.UUID]] = []
            for document_id, path in page:
                claims.release(conn, run.source_id, document_id)
                doc = doc_repo.get(conn, document_id, for_update=True)
                if doc is not None and not claims.claimed(conn, document_id):
                    # an archive's members go with it (R-ARC-2), as when an S3 drop is removed
                    members = (doc_repo.archive_members(conn, doc.kb_id, doc.source_path)
                               if doc.kb_id is not None and doc.source_path else [])
                    for row in [doc, *members]:
                        delete_row_and_chunks(conn, row)
                        gone.append(row)
                    rows.append((path, document_id))
            runs.add_removed(conn, run_id, rows)
        for doc in gone:
            forget_objects(ctx.store, doc)
        removed += len(rows)
    return {"removed": removed}


def finish(ctx: SyncContext, run_id: uuid.UUID, event: dict[str, Any]) -> dict[str, Any]:
    with ctx.uow() as conn:
        run = runs.get(conn, run_id, for_update=True)
        if run is None or not run.active:
            return {"status": run.status if run else "gone"}
        runs.settle_pending(conn, run_id, gone=GONE, unknown_failure=UNKNOWN_FAILURE)
        status = "failed" if run.error else "succeeded"
        p = runs.progress(conn, run_id)
        runs.update(conn, run_id, status=status, finished_at=datetime.now(UTC), **_totals(p))
        # A cursor advances only past a run that ingested everything it listed: a file that failed, or
        # that the pipeline had not finished when the run gave up waiting, is listed again next time
        # instead of being skipped by a delta that has moved on.
        if (status == "succeeded" and not p.failed and not p.pending and run.connector_state is not None
                and run.trigger != "retry"):
            sources.keep_connector_state(conn, run.source_id, run.connector_state)
    return {"status": status}


def _totals(p: runs.Progress) -> dict[str, Any]:
    return {"files_listed": p.listed, "files_new": p.new, "files_updated": p.updated,
            "files_unchanged": p.unchanged, "files_ignored": p.ignored, "files_failed": p.failed,
            "files_removed": p.removed}


def _error_name(event: dict[str, Any]) -> str:
    error = event.get("error")
    name = error.get("Error") if isinstance(error, dict) else None
    # The error's name only: a Cause carries the exception's own text, which may name hosts or buckets.
    return "".join(ch for ch in str(name or "an unknown error") if ch.isalnum() or ch in "._- ")[:80]


def record_failure(ctx: SyncContext, run_id: uuid.UUID, event: dict[str, Any]) -> dict[str, Any]:
    """The Catch of every step: the run is failed, in words, and nothing is removed."""
    name = _error_name(event)
    step = "".join(ch for ch in str(event.get("step") or "a") if ch.isalnum() or ch == "_")[:40]
    with ctx.uow() as conn:
        runs.settle_pending(conn, run_id, gone=GONE, unknown_failure=UNKNOWN_FAILURE)
        runs.fail_undecided(conn, run_id, UNDECIDED)
        journal.clear(conn, run_id)  # a listing left part-way is not gone on with
        runs.update(conn, run_id, only_active=True, status="failed", finished_at=datetime.now(UTC),
                    error=f"The run stopped at its {step} step ({name}); nothing was removed. The next run starts "
                          "over.", **_totals(runs.progress(conn, run_id)))
    return {"status": "failed"}


TASKS: dict[str, Callable[[SyncContext, uuid.UUID, dict[str, Any]], dict[str, Any]]] = {
    "list": list_files,
    "batch": process_batch,
    "batch_failed": batch_failed,
    "await": await_ingestion,
    "reconcile": reconcile,
    "finish": finish,
    "fail": record_failure,
}
