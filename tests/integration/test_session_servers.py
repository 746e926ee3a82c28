"""Every server a test session starts stops when the session ends, however it ends (tests/session_servers.py).

A small suite runs in a subprocess with two xdist workers and this project's fixtures: the embedded
PostgreSQL of tests/conftest.py, restarted under its handle as test_ingest_faults.py does (after a
green `make test`, such a restarted postmaster was found running an hour later), and a program a
fixture starts and stops (as Azurite's, the MCP server's and `sluice local up`'s fixtures do). One
test fails, one crashes its worker, and the run is interrupted part-way (SIGTERM to pytest, as a
CI timeout sends it; Ctrl-C takes the same path, and xdist hands it to the workers too). Then
nothing of the run may still run: no process whose command line or working directory is in its
basetemp (a postmaster's is its data directory), none the suite started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

COMMON = '''
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.session_servers import restart_postgres

MARKS = Path(os.environ["SERVERS_MARKS"])


def mark(kind, pid):
    (MARKS / f"{kind}-{pid}").write_text(str(psutil.Process(pid).create_time()))


@pytest.fixture
def program():
    """A server a fixture starts and stops, working outside the basetemp: only the session knows it."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], cwd="/",
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mark("program", proc.pid)
    yield proc
    proc.terminate()
    proc.wait()
'''

# --dist loadfile: each worker runs one of the files.
SUITE = {
    "test_interrupted.py": COMMON + '''

def test_restarted_under_its_handle(pg_server):
    mark("restart", os.getpid())
    restart_postgres(pg_server)


def test_fails(pg_server, program):
    assert False


def test_waits(pg_server, program):
    mark("waits", os.getpid())
    time.sleep(300)
''',
    "test_crashed.py": COMMON + '''

def test_passes(pg_server, program):
    pass


def test_crashes(pg_server, program):
    mark("crash", os.getpid())
    os.kill(os.getpid(), signal.SIGKILL)
''',
}


def left_running(marks: Path, basetemp: Path) -> list[str]:
    """What of the run still runs: the programs its tests started, whatever works in its basetemp."""
    left = []
    for m in marks.glob("program-*"):
        pid = int(m.name.split("-")[1])
        try:
            if psutil.Process(pid).create_time() == float(m.read_text()):
                left.append(f"{pid} (a fixture's program)")
        except psutil.NoSuchProcess:
            pass
    for p in psutil.process_iter(["cmdline", "cwd"]):
        try:
            args, cwd = " ".join(p.info["cmdline"] or []), p.info["cwd"] or ""
        except psutil.Error:
            continue
        if p.pid != os.getpid() and (f"{basetemp}/" in args or cwd.startswith(f"{basetemp}/")):
            left.append(f"{p.pid} {args} (in {cwd})")
    return left


def pid_of(marks: Path, kind: str) -> int:
    (found,) = marks.glob(f"{kind}-*")
    return int(found.name.split("-")[1])


def test_an_interrupted_run_with_a_failure_and_a_crashed_worker_leaves_no_server(tmp_path):
    suite, marks, basetemp = tmp_path / "suite", tmp_path / "marks", tmp_path / "basetemp"
    suite.mkdir()
    marks.mkdir()
    for name, text in SUITE.items():
        (suite / name).write_text(text)
    path = os.pathsep.join([str(ROOT), str(ROOT / "shared"), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml"),
         "--rootdir", str(suite), "-p", "tests.conftest", "-n", "2", "--dist", "loadfile",
         "--max-worker-restart", "0", "--basetemp", str(basetemp), str(suite)],
        cwd=suite, env={**os.environ, "PYTHONPATH": path, "SERVERS_MARKS": str(marks)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (list(marks.glob("crash-*")) and list(marks.glob("waits-*"))):
            if proc.poll() is not None or time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                pytest.fail("the suite did not reach its crash and its long test:\n" + proc.communicate(timeout=60)[0])
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)  # as a CI timeout does; before, pytest died without its teardowns
        out, _ = proc.communicate(timeout=120)  # until its watchers, which share its output, are done too
    finally:
        proc.kill()
    assert left_running(marks, basetemp) == [], out
    assert "test_interrupted.py::test_fails - assert False" in out, out
    # The worker that restarted its PostgreSQL and was interrupted stopped everything in its
    # teardowns; the crashed worker's servers were stopped by its watcher.
    assert f"pytest process {pid_of(marks, 'crash')} left" in out, out
    assert f"pytest process {pid_of(marks, 'restart')} left" not in out, out
