"""The sync_logs and sync_log_files tables: a source's runs, and what each run did with each file."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from sluice.db.connection import Connection

ACTIVE = ("queued", "running")
OUTCOMES = ("new", "updated", "unchanged", "ignored", "failed", "removed")
# Rows the reconcile step adds for documents it removed: not part of the listing.
REMOVED_BATCH = -1


@dataclass
class SyncRun:
    id: uuid.UUID
    source_id: uuid.UUID
    kb_id: uuid.UUID
    collection_name: str
    connector: str
    sync_mode: str
    trigger: str
    retry_of: uuid.UUID | None
    status: str
    execution_arn: str | None
    listing_complete: bool | None
    files_listed: int
    files_new: int
    files_updated: int
    files_unchanged: int
    files_ignored: int
    files_failed: int
    files_removed: int
    error: str | None
    started_by: str
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    files_expired_at: datetime | None = None  # when the retention sweep deleted its file rows
    # What the connector would keep if this run succeeds (migration 0021): the list task writes it,
    # `finish` hands it to the source.
    connector_state: dict[str, Any] | None = None
    unchanged: bool = False  # the connector said nothing changed since its kept state: nothing listed or removed
    # What the connector asked of the remote side (migration 0023; None where it does not count).
    requests_made: int | None = None
    bytes_downloaded: int | None = None

    @property
    def active(self) -> bool:
        return self.status in ACTIVE


_FIELDS = ", ".join(SyncRun.__dataclass_fields__)
_UPDATABLE = {
    "status", "execution_arn", "listing_complete", "files_listed", "files_new", "files_updated",
    "files_unchanged", "files_ignored", "files_failed", "files_removed", "error", "started_at", "finished_at",
    "connector_state", "unchanged", "requests_made", "bytes_downloaded",
}


def insert(conn: Connection, *, source_id: uuid.UUID, kb_id: uuid.UUID, collection_name: str, connector: str,
           sync_mode: str, trigger: str, started_by: str, retry_of: uuid.UUID | None = None) -> SyncRun:
    """A queued run; raises ``UniqueViolation`` when the source already has one queued or running."""
    row = conn.execute(
        f"""
        INSERT INTO sync_logs (id, source_id, kb_id, collection_name, connector, sync_mode, trigger, retry_of,
                               started_by)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING {_FIELDS}
        """,
        (uuid.uuid4(), source_id, kb_id, collection_name, connector, sync_mode, trigger, retry_of, started_by),
    ).fetchone()
    assert row is not None
    return SyncRun(**row)


def get(conn: Connection, run_id: uuid.UUID, *, for_update: bool = False) -> SyncRun | None:
    suffix = " FOR UPDATE" if for_update else ""
    row = conn.execute(f"SELECT {_FIELDS} FROM sync_logs WHERE id = %s{suffix}", (run_id,)).fetchone()
    return SyncRun(**row) if row else None


def active_for_source(conn: Connection, source_id: uuid.UUID) -> SyncRun | None:
    row = conn.execute(f"SELECT {_FIELDS} FROM sync_logs WHERE source_id = %s AND status IN ('queued', 'running')",
                       (source_id,)).fetchone()
    return SyncRun(**row) if row else None


def latest_for_source(conn: Connection, source_id: uuid.UUID) -> SyncRun | None:
    row = conn.execute(
        f"SELECT {_FIELDS} FROM sync_logs WHERE source_id = %s ORDER BY created_at DESC, id LIMIT 1", (source_id,)
    ).fetchone()
    return SyncRun(**row) if row else None


def list_for_source(conn: Connection, source_id: uuid.UUID, *, limit: int, offset: int) -> list[SyncRun]:
    rows = conn.execute(
        f"SELECT {_FIELDS} FROM sync_logs WHERE source_id = %s ORDER BY created_at DESC, id LIMIT %s OFFSET %s",
        (source_id, limit, offset),
    ).fetchall()
    return [SyncRun(**r) for r in rows]


def count_for_source(conn: Connection, source_id: uuid.UUID) -> int:
    row = conn.execute("SELECT count(*) AS n FROM sync_logs WHERE source_id = %s", (source_id,)).fetchone()
    assert row is not None
    return int(row["n"])


def update(conn: Connection, run_id: uuid.UUID, *, only_active: bool = False, **values: Any) -> bool:
    """Update fields; with ``only_active`` only while the run is still queued or running."""
    unknown = set(values) - _UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    values = {k: Jsonb(v) if k == "connector_state" and v is not None else v for k, v in values.items()}
    sets = ", ".join(f"{k} = %({k})s" for k in values)
    where = "id = %(run_id)s" + (" AND status IN ('queued', 'running')" if only_active else "")
    return conn.execute(f"UPDATE sync_logs SET {sets} WHERE {where}", {**values, "run_id": run_id}).rowcount > 0


def add_transfer(conn: Connection, run_id: uuid.UUID, requests: int, received: int) -> None:
    """Count a step's requests and bytes into the run's totals (steps of one run may run at once)."""
    conn.execute("UPDATE sync_logs SET requests_made = coalesce(requests_made, 0) + %s, "
                 "bytes_downloaded = coalesce(bytes_downloaded, 0) + %s WHERE id = %s", (requests, received, run_id))


# --- files -------------------------------------------------------------------------------------

@dataclass
class RunFile:
    seq: int
    batch: int
    source_path: str
    remote_key: str
    name: str
    etag: str | None
    size: int | None
    outcome: str | None = None
    pending: bool = False
    reason: str | None = None
    document_id: uuid.UUID | None = None
    decided_at: datetime | None = None


_FILE_FIELDS = ", ".join(RunFile.__dataclass_fields__)


def clear_files(conn: Connection, run_id: uuid.UUID) -> None:
    conn.execute("DELETE FROM sync_log_files WHERE run_id = %s", (run_id,))


def add_files(conn: Connection, run_id: uuid.UUID, files: Iterable[RunFile]) -> int:
    """Write listed files with COPY (a listing can be large); returns how many."""
    n = 0
    with conn.cursor().copy(
        "COPY sync_log_files (run_id, seq, batch, source_path, remote_key, name, etag, size, outcome, reason,"
        " decided_at) FROM STDIN"
    ) as copy:
        for f in files:
            copy.write_row((run_id, f.seq, f.batch, f.source_path, f.remote_key, f.name, f.etag, f.size,
                            f.outcome, f.reason, f.decided_at))
            n += 1
    return n


def batch_files(conn: Connection, run_id: uuid.UUID, batch: int) -> list[RunFile]:
    rows = conn.execute(
        f"SELECT {_FILE_FIELDS} FROM sync_log_files WHERE run_id = %s AND batch = %s ORDER BY seq", (run_id, batch)
    ).fetchall()
    return [RunFile(**r) for r in rows]


@dataclass(frozen=True)
class Outcome:
    seq: int
    outcome: str
    reason: str | None = None
    document_id: uuid.UUID | None = None
    pending: bool = False


def record(conn: Connection, run_id: uuid.UUID, outcomes: Sequence[Outcome]) -> None:
    if not outcomes:
        return
    with conn.cursor() as cur:
        cur.executemany(
            """
            UPDATE sync_log_files SET outcome = %s, reason = %s, document_id = %s, pending = %s, decided_at = now()
             WHERE run_id = %s AND seq = %s
            """,
            [(o.outcome, o.reason, o.document_id, o.pending, run_id, o.seq) for o in outcomes],
        )


def add_removed(conn: Connection, run_id: uuid.UUID, removed: Sequence[tuple[str, uuid.UUID]]) -> None:
    """Rows for documents the reconcile step removed (their file is no longer listed)."""
    if not removed:
        return
    row = conn.execute("SELECT coalesce(max(seq), 0) AS n FROM sync_log_files WHERE run_id = %s",
                       (run_id,)).fetchone()
    assert row is not None
    start = int(row["n"]) + 1
    with conn.cursor() as cur:
        cur.executemany(
            """
            INSERT INTO sync_log_files (run_id, seq, batch, source_path, remote_key, name, outcome, document_id,
                                        reason, decided_at)
            VALUES (%s, %s, %s, %s, %s, %s, 'removed', %s, %s, now())
            """,
            [(run_id, start + i, REMOVED_BATCH, path, "", name_of(path), doc,
              "No longer listed by the source, and no other source lists it: removed.")
             for i, (path, doc) in enumerate(removed)],
        )


def name_of(source_path: str) -> str:
    return source_path.rstrip("/").rsplit("/", 1)[-1] or source_path


def fail_undecided(conn: Connection, run_id: uuid.UUID, reason: str, batch: int | None = None) -> int:
    return conn.execute(
        """
        UPDATE sync_log_files SET outcome = 'failed', reason = %s, decided_at = now()
         WHERE run_id = %s AND outcome IS NULL AND (%s::integer IS NULL OR batch = %s)
        """,
        (reason, run_id, batch, batch),
    ).rowcount


def settle_pending(conn: Connection, run_id: uuid.UUID, *, gone: str, unknown_failure: str) -> int:
    """Settle the files whose documents the pipeline has finished; returns how many still index.

    A document that failed makes its file ``failed`` with the document's own summary (R-DOC-4);
    one deleted meanwhile makes it ``failed`` with ``gone``.
    """
    conn.execute(
        """
        UPDATE sync_log_files f
           SET pending = false,
               outcome = CASE WHEN d.status = 'error' THEN 'failed' ELSE f.outcome END,
               reason = CASE WHEN d.status = 'error' THEN coalesce(d.error_message, %(unknown)s) ELSE f.reason END
          FROM documents d
         WHERE f.run_id = %(run)s AND f.pending AND d.id = f.document_id AND d.status IN ('done', 'error')
        """,
        {"run": run_id, "unknown": unknown_failure},
    )
    conn.execute(
        """
        UPDATE sync_log_files f SET pending = false, outcome = 'failed', reason = %(gone)s
         WHERE f.run_id = %(run)s AND f.pending
           AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = f.document_id)
        """,
        {"run": run_id, "gone": gone},
    )
    row = conn.execute("SELECT count(*) AS n FROM sync_log_files WHERE run_id = %s AND pending",
                       (run_id,)).fetchone()
    assert row is not None
    return int(row["n"])


def fail_pending(conn: Connection, run_id: uuid.UUID, reason: str) -> int:
    return conn.execute(
        "UPDATE sync_log_files SET pending = false, outcome = 'failed', reason = %s WHERE run_id = %s AND pending",
        (reason, run_id),
    ).rowcount


@dataclass(frozen=True)
class Progress:
    listed: int
    decided: int
    new: int
    updated: int
    unchanged: int
    ignored: int
    failed: int
    removed: int
    ingested: int
    pending: int


def progress(conn: Connection, run_id: uuid.UUID) -> Progress:
    row = conn.execute(
        """
        SELECT count(*) FILTER (WHERE batch >= 0)                                 AS listed,
               count(*) FILTER (WHERE batch >= 0 AND outcome IS NOT NULL)         AS decided,
               count(*) FILTER (WHERE outcome = 'new')                             AS new,
               count(*) FILTER (WHERE outcome = 'updated')                         AS updated,
               count(*) FILTER (WHERE outcome = 'unchanged')                       AS unchanged,
               count(*) FILTER (WHERE outcome = 'ignored')                         AS ignored,
               count(*) FILTER (WHERE outcome = 'failed')                          AS failed,
               count(*) FILTER (WHERE outcome = 'removed')                         AS removed,
               count(*) FILTER (WHERE outcome IN ('new', 'updated') AND NOT pending) AS ingested,
               count(*) FILTER (WHERE pending)                                     AS pending
          FROM sync_log_files WHERE run_id = %s
        """,
        (run_id,),
    ).fetchone()
    assert row is not None
    return Progress(**{k: int(v) for k, v in row.items()})


def files_page(conn: Connection, run_id: uuid.UUID, *, limit: int, offset: int, outcome: str | None = None
               ) -> tuple[list[RunFile], int]:
    where = "run_id = %(run)s" + (" AND outcome = %(outcome)s" if outcome else "")
    params = {"run": run_id, "outcome": outcome, "limit": limit, "offset": offset}
    rows = conn.execute(
        f"SELECT {_FILE_FIELDS} FROM sync_log_files WHERE {where} ORDER BY seq LIMIT %(limit)s OFFSET %(offset)s",
        params,
    ).fetchall()
    total = conn.execute(f"SELECT count(*) AS n FROM sync_log_files WHERE {where}", params).fetchone()
    assert total is not None
    return [RunFile(**r) for r in rows], int(total["n"])


# --- retention: old runs' file rows ----------------------------------------------------------

def expirable(conn: Connection, *, keep: int, limit: int) -> list[uuid.UUID]:
    """Finished runs whose file rows may go: each source's runs past its latest ``keep``, oldest first."""
    rows = conn.execute(
        """
        SELECT id FROM (
            SELECT id, status, files_expired_at, created_at,
                   row_number() OVER (PARTITION BY source_id ORDER BY created_at DESC, id) AS place
              FROM sync_logs) ranked
         WHERE place > %s AND status NOT IN ('queued', 'running') AND files_expired_at IS NULL
         ORDER BY created_at, id LIMIT %s
        """,
        (keep, limit),
    ).fetchall()
    return [r["id"] for r in rows]


def expire_files(conn: Connection, run_id: uuid.UUID) -> int | None:
    """Delete a finished run's file rows and note when; returns how many went (None: not expirable)."""
    marked = conn.execute(
        "UPDATE sync_logs SET files_expired_at = now() WHERE id = %s AND status NOT IN ('queued', 'running')"
        " AND files_expired_at IS NULL", (run_id,)).rowcount
    if not marked:
        return None
    return conn.execute("DELETE FROM sync_log_files WHERE run_id = %s", (run_id,)).rowcount


def failed_paths(conn: Connection, run_id: uuid.UUID) -> set[str]:
    rows = conn.execute(
        "SELECT source_path FROM sync_log_files WHERE run_id = %s AND outcome = 'failed' AND batch >= 0", (run_id,)
    ).fetchall()
    return {r["source_path"] for r in rows}
