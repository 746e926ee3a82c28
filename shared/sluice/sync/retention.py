"""Old runs' file lists expire: ``sync_log_files`` holds a row per listed file per run, so a
nightly source of 100,000 files would add 100,000 rows a night for ever. The reaper's sweep
(functions/reaper, every 15 minutes) deletes the file rows of each source's finished runs past its
latest ``SYNC_RUN_FILES_KEEP_RUNS``; the run's row, its totals and its error stay, and reading its
files says why there are none. A run still going, and the latest runs (the ones a retry of failed
files is asked of), keep theirs.
"""

from __future__ import annotations

import logging

from sluice.config import SyncSettings
from sluice.db import sync_runs as runs
from sluice.db.connection import UnitOfWork

log = logging.getLogger("sluice.sync")

# Runs one sweep expires at most (each in its own transaction): a backlog drains over a few sweeps.
RUNS_PER_SWEEP = 200

EXPIRED_NOTE = ("This run's file list was removed: a source keeps the file lists of its latest "
                "SYNC_RUN_FILES_KEEP_RUNS runs. Its totals stay.")


def expire_run_files(uow: UnitOfWork, settings: SyncSettings) -> int:
    """Delete the file rows of the runs past each source's latest few; returns how many runs."""
    with uow() as conn:
        due = runs.expirable(conn, keep=settings.sync_run_files_keep_runs, limit=RUNS_PER_SWEEP)
    expired = rows = 0
    for run_id in due:
        with uow() as conn:
            n = runs.expire_files(conn, run_id)
        if n is not None:
            expired += 1
            rows += n
    if expired:
        log.info("old sync runs' file lists expired", extra={"runs": expired, "rows": rows})
    return expired
