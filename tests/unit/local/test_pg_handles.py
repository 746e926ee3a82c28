"""A killed `sluice local up` leaves its pid among pgserver's handles; the next one drops it, so its
own stop stops the embedded PostgreSQL (the e2e restart tests check the server is gone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sluice.local.pgdata import forget_dead_handles


def test_the_pids_of_processes_that_are_gone_are_dropped_and_the_living_kept(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / ".handle_pids.json").write_text(json.dumps([gone.pid, os.getpid(), 1]))

    forget_dead_handles(tmp_path)

    assert json.loads((tmp_path / ".handle_pids.json").read_text()) == [os.getpid(), 1]


def test_no_handle_file_is_nothing_to_do(tmp_path: Path) -> None:
    forget_dead_handles(tmp_path)

    assert not (tmp_path / ".handle_pids.json").exists()
