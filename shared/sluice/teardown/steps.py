"""The workflow's tasks, each idempotent (a retried or re-run execution finishes, and one run
after the release changes nothing):

``chunks``   drop the table (its count recorded first), or delete only these bases' chunks
             from a table a sibling base keeps, in batches; a table already gone is a success.
``sources``  delete the deleted bases' sync sources and their claims (none without sync tables).
``objects``  delete the stored objects of the deleted rows, listed first so the receipt counts
             what existed (objects and bytes), in DeleteObjects calls of 1,000 keys; objects
             already gone are a success.
``release``  check nothing is left, then release the name and close the receipt.

Each task locks the teardown's row for each batch, so two executions of one teardown (a
sweep's restart beside a stalled run) take turns instead of counting twice. A task that has
worked ``teardown_step_budget_seconds`` returns ``{"more": true}`` and the workflow calls it
again, so no Lambda invocation runs long.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sluice.db import documents as doc_repo
from sluice.db import teardowns as td_repo
from sluice.db.connection import Connection, set_lock_timeout
from sluice.db.teardowns import GoneDocument, Teardown
from sluice.storage import content_key
from sluice.teardown.context import TeardownContext
from sluice.teardown.receipts import summary
from sluice.teardown.request import now_iso
from sluice.vectors import store as vector_store

log = logging.getLogger("sluice.teardown")

STEPS = ("chunks", "sources", "objects", "release")
CHUNKS_PER_BATCH = 5_000
DOCUMENTS_PER_BATCH = 200  # at most 5 keys each: one DeleteObjects call a batch
LISTING_THREADS = 8
UNFILED_FAILED_MESSAGE = ("The collection's vector table was dropped by a teardown, so this document's chunks "
                          "are gone; upload it again.")


class TeardownIncompleteError(Exception):
    """The release found something of the teardown left; the workflow records it and the sweep retries."""


class ObjectsNotDeletedError(Exception):
    """S3 refused to delete some objects; the step fails and is retried."""


def run_step(ctx: TeardownContext, step: str, teardown_id: str | uuid.UUID) -> dict[str, Any]:
    """One task of the workflow; ``{"more": true}`` asks to be called again."""
    ident = teardown_id if isinstance(teardown_id, uuid.UUID) else uuid.UUID(str(teardown_id))
    work: dict[str, Callable[[TeardownContext, uuid.UUID], dict[str, Any]]] = {
        "chunks": remove_chunks, "sources": remove_sync_sources, "objects": remove_objects, "release": release,
    }
    if step not in work:
        raise ValueError(f"no teardown step {step!r}; the steps are {', '.join(STEPS)}")
    return work[step](ctx, ident)


def run_all(ctx: TeardownContext, teardown_id: uuid.UUID,
            progress: Callable[[Teardown], None] | None = None) -> Teardown:
    """Every step in order, in this process (``sluice drop`` where no workflow is configured, and
    tests): the same tasks the workflow runs, and a failure recorded as the workflow's Catch
    records it. Returns the receipt as it ends (done, or failed with its step and reason)."""
    with ctx.uow() as conn:
        td = td_repo.get(conn, teardown_id)
        if td is not None and not td.released:
            td_repo.update(conn, teardown_id, add={"attempts": 1},
                           event={"at": now_iso(), "event": "started", "execution": "in-process"})
    for step in STEPS:
        while True:
            try:
                result = run_step(ctx, step, teardown_id)
            except Exception as exc:
                log.exception("teardown step failed in process", extra={"teardown_id": str(teardown_id)})
                record_failure(ctx, teardown_id, step, {"Error": type(exc).__name__,
                                                        "Cause": json.dumps({"errorMessage": str(exc)})})
                return _current(ctx, teardown_id)
            if progress is not None:
                with ctx.uow() as conn:
                    current = td_repo.get(conn, teardown_id)
                if current is not None:
                    progress(current)
            if not result.get("more"):
                break
    return _current(ctx, teardown_id)


def _current(ctx: TeardownContext, teardown_id: uuid.UUID) -> Teardown:
    with ctx.uow() as conn:
        current = td_repo.get(conn, teardown_id)
    assert current is not None
    return current


def _begin(conn: Connection, teardown_id: uuid.UUID, step: str) -> Teardown | None:
    """The teardown, locked, marked at ``step``; None when it is gone or already released."""
    td = td_repo.get(conn, teardown_id, lock=True)
    if td is None or td.released:
        return None
    if td.state != "running" or td.step != step:
        td_repo.update(conn, td.id, state="running", step=step)
    return td


def _finished(step: str, td: Teardown | None) -> dict[str, Any]:
    return {"step": step, "more": False, "state": "absent" if td is None else td.state}


def _lock_timeout(conn: Connection, ctx: TeardownContext) -> None:
    ms = max(1, int(ctx.settings.teardown_lock_timeout_seconds * 1000))
    set_lock_timeout(conn, ms)


# --- chunks ------------------------------------------------------------------------------------

def remove_chunks(ctx: TeardownContext, teardown_id: uuid.UUID) -> dict[str, Any]:
    deadline = time.monotonic() + ctx.settings.teardown_step_budget_seconds
    while True:
        with ctx.uow() as conn:
            td = _begin(conn, teardown_id, "chunks")
            if td is None:
                return _finished("chunks", td)
            _lock_timeout(conn, ctx)
            if td.drop_table:
                _drop(conn, td)
                return {"step": "chunks", "more": False, "state": "running"}
            ids = td_repo.chunk_document_ids(conn, td.id, outside=td.deleted_kb_ids)
            n = vector_store.delete_chunks_of(conn, td.collection_name, td.deleted_kb_ids, ids,
                                              limit=CHUNKS_PER_BATCH)
            finished = n < CHUNKS_PER_BATCH
            if finished:
                td_repo.update(conn, td.id, add={"chunks_removed": n}, table_dropped=False)
            else:
                td_repo.update(conn, td.id, add={"chunks_removed": n})
        if finished:
            return {"step": "chunks", "more": False, "state": "running"}
        if time.monotonic() > deadline:
            return {"step": "chunks", "more": True, "state": "running"}


def _drop(conn: Connection, td: Teardown) -> None:
    """Count, drop, and mark the rows left without chunks, in one transaction: a retry after a
    failure finds the table still there, one after success finds it gone and adds nothing."""
    name = td.collection_name
    present = vector_store.table_exists(conn, name)
    chunks = vector_store.count_chunks(conn, name) if present else 0
    # Another tenant's unfiled rows stay, with their files; nothing stands behind them any more.
    failed = doc_repo.fail_unfiled(conn, name, UNFILED_FAILED_MESSAGE) if present else 0
    vector_store.drop_table(conn, name)
    td_repo.update(conn, td.id, table_dropped=True, add={"chunks_removed": chunks, "unfiled_documents_failed": failed})


# --- sync sources ------------------------------------------------------------------------------

def remove_sync_sources(ctx: TeardownContext, teardown_id: uuid.UUID) -> dict[str, Any]:
    """The deleted bases' sources and their claims; a cleared default keeps its sources (its row
    remains), and only the claims on the documents it deleted go."""
    with ctx.uow() as conn:
        td = _begin(conn, teardown_id, "sources")
        if td is None:
            return _finished("sources", td)
        td_repo.remove_claims_of_documents(conn, td.id)
        now_gone = td_repo.remove_sync_sources(conn, td.sync_source_ids, td.deleted_kb_ids)
        # Gone at the request (a cascade from the base) or now: the receipt counts both, once.
        removed = max(td.sync_sources_removed, len(set(td.sync_source_ids)), now_gone)
        td_repo.update(conn, td.id, sync_sources_removed=removed)
    return {"step": "sources", "more": False, "state": "running"}


# --- stored objects ----------------------------------------------------------------------------

def _prefixes(doc: GoneDocument) -> list[tuple[str, bool]]:
    """Where a deleted document's objects may be: (key or prefix, exact)."""
    places = [(content_key(doc.document_id), True),
              (f"stage/parsed/{doc.document_id}.", False),
              (f"stage/chunks/{doc.document_id}.", False)]
    if doc.storage_path:
        places.append((doc.storage_path, True))
    if doc.stage == "queued":
        places.append((f"incoming/{doc.document_id}/", False))  # a presigned upload that may still land
    return places


def objects_of(ctx: TeardownContext, docs: list[GoneDocument]) -> dict[str, int]:
    """Every object that exists for ``docs``, with its size, listed (ListBucket, never a read)."""
    places = [place for doc in docs for place in _prefixes(doc)]

    def listed(place: tuple[str, bool]) -> dict[str, int]:
        key, exact = place
        found = ctx.store.listed(key)
        return {k: v for k, v in found.items() if k == key} if exact else found

    out: dict[str, int] = {}
    with ThreadPoolExecutor(max_workers=LISTING_THREADS) as pool:
        for found in pool.map(listed, places):
            out.update(found)
    return out


def _delete(ctx: TeardownContext, objects: dict[str, int]) -> None:
    refused = ctx.store.delete_many(sorted(objects))
    if refused:
        raise ObjectsNotDeletedError(f"{len(refused)} of {len(objects)} objects could not be deleted")


def remove_objects(ctx: TeardownContext, teardown_id: uuid.UUID) -> dict[str, Any]:
    deadline = time.monotonic() + ctx.settings.teardown_step_budget_seconds
    while True:
        with ctx.uow() as conn:
            td = _begin(conn, teardown_id, "objects")
            if td is None:
                return _finished("objects", td)
            batch = td_repo.pending_documents(conn, td.id, DOCUMENTS_PER_BATCH)
            if batch:
                objects = objects_of(ctx, batch)
            else:
                # Last: what the deleted bases' inbox prefixes still hold (drops whose rows never opened).
                objects = {k: v for kb in td.deleted_kb_ids for k, v in ctx.store.listed(f"inbox/{kb}/").items()}
            _delete(ctx, objects)
            td_repo.forget_documents(conn, td.id, [d.document_id for d in batch])
            td_repo.update(conn, td.id, add={"objects_removed": len(objects), "bytes_removed": sum(objects.values())})
        if not batch:
            return {"step": "objects", "more": False, "state": "running"}
        if time.monotonic() > deadline:
            return {"step": "objects", "more": True, "state": "running"}


# --- release -----------------------------------------------------------------------------------

def left_over(conn: Connection, td: Teardown) -> dict[str, int]:
    """What of the teardown is still there: each must be zero before the name is released."""
    return {
        "documents": td_repo.count_documents(conn, td.kb_ids),
        "chunks": vector_store.count_chunks_of(conn, td.collection_name, td.kb_ids),
        "documents_with_objects": td_repo.count_pending_documents(conn, td.id),
        "sync_sources": td_repo.count_sync_sources(conn, td.sync_source_ids, td.deleted_kb_ids),
    }


def release(ctx: TeardownContext, teardown_id: uuid.UUID) -> dict[str, Any]:
    with ctx.uow() as conn:
        td = _begin(conn, teardown_id, "release")
        if td is None:
            return _finished("release", td)
        left = left_over(conn, td)
        if any(left.values()):
            raise TeardownIncompleteError(
                "Something of the teardown is still there: " + ", ".join(f"{k} {v}" for k, v in left.items() if v))
        td_repo.release(conn, td.id, left, event={"at": now_iso(), "event": "done"})
        done = td_repo.get(conn, td.id)
    assert done is not None
    log.info("teardown done", extra={"receipt": summary(done)})
    return {"step": "release", "more": False, "state": "done"}


# --- failure -----------------------------------------------------------------------------------

def failure_reason(step: str, error: dict[str, Any]) -> str:
    """The receipt's sentence for a failed step: its name and the error's type, never its text
    (which may name hosts, buckets or SQL); the log has the whole error."""
    kind = str(error.get("Error") or "an error")
    if kind == "TeardownIncompleteError":
        cause = _cause_message(error)
        return f"The {step} step found the teardown incomplete ({cause}); the hourly sweep runs it again."
    return (f"The {step} step failed ({kind}); the name stays reserved and the hourly sweep runs the "
            "teardown again.")


def _cause_message(error: dict[str, Any]) -> str:
    try:
        cause = json.loads(str(error.get("Cause") or "{}"))
    except ValueError:
        return str(error.get("Cause") or "")
    return str(cause.get("errorMessage", "")) if isinstance(cause, dict) else str(cause)


def record_failure(ctx: TeardownContext, teardown_id: str | uuid.UUID, step: str, error: dict[str, Any]
                   ) -> dict[str, Any]:
    """The workflow's Catch: the receipt says which step failed and why; the reservation stays."""
    ident = teardown_id if isinstance(teardown_id, uuid.UUID) else uuid.UUID(str(teardown_id))
    reason = failure_reason(step, error)
    log.warning("teardown step failed", extra={"teardown_id": str(ident), "step": step,
                                               "error_type": error.get("Error"), "cause": _cause_message(error)})
    with ctx.uow() as conn:
        td = td_repo.get(conn, ident, lock=True)
        if td is None or td.released:
            return _finished(step, td)
        td_repo.update(conn, ident, state="failed", step=step, failed_step=step, last_error=reason,
                       event={"at": now_iso(), "event": "failed", "step": step, "reason": reason})
        failed = td_repo.get(conn, ident)
    assert failed is not None
    log.warning("teardown failed", extra={"receipt": summary(failed)})
    return {"step": step, "more": False, "state": "failed"}
