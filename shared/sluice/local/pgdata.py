"""The embedded PostgreSQL's data directory, as ``sluice local up`` takes it over from a run before."""

from __future__ import annotations

import json
import os
from pathlib import Path


def forget_dead_handles(pgdata: Path) -> None:
    """pgserver stops its server when the last process holding it lets go, and counts them by pid in
    ``.handle_pids.json``. A killed ``sluice local up`` never takes its pid out, so the next one adopts
    the server it left running and, on stop, leaves it running for good. The pids of processes that
    are gone are dropped first."""
    handles = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text())
    except (FileNotFoundError, ValueError):
        return
    alive = [pid for pid in pids if _running(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
