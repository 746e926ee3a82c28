"""The servers a test session starts stop when it ends, however it ends.

A fixture stops what it started in its teardown, and that covers a session that finishes, even
with failed tests. It does not cover a process that dies without its teardowns: an xdist worker
that crashes, a pytest killed. What a test starts often outlives it then: the embedded PostgreSQL
is started by ``pg_ctl``, which detaches the postmaster into a session of its own (no Ctrl-C
reaches it, and it runs until it is told to stop); Azurite, the MCP server, Chromium and
``sluice local up`` are children that nothing stops once their parent is gone.

So every pytest process (a plain run, the xdist controller, each worker) has a watcher: a small
process of its own (run from this file) that notes the pytest process's descendants every second
and, once that process has ended for whatever reason, stops every one of them still running and
every process whose command line or working directory lies in the session's basetemp (where each
embedded PostgreSQL keeps its data, and a `sluice local up` its stack). A session that ends
normally waits for its watcher (``stop_watcher``), so nothing it started runs after it.

A SIGTERM to a pytest process (a CI timeout's, a `kill`) interrupts the run as Ctrl-C does, so the
teardowns run then too (``interrupt_on_sigterm``).
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

POLL_SECONDS = 1.0  # how often a watcher notes its pytest process's descendants
STOP_GRACE = 10.0  # how long a server gets to stop on its signal before it is killed

_watcher: subprocess.Popen[bytes] | None = None
_lock = threading.Lock()


# --- in the pytest process ---------------------------------------------------------------------------

def interrupt_on_sigterm() -> None:
    """A SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so the run's teardowns stop its servers.
    A second SIGTERM kills at once, as before."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return  # someone else's handler

    def interrupt(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


def start_watcher(basetemp: Path) -> None:
    """Watch this process: when it ends, whatever it started that still runs is stopped."""
    global _watcher
    if _watcher is not None:
        return
    # Its own session, so the Ctrl-C that interrupts the run does not end the watcher before the run.
    _watcher = subprocess.Popen([sys.executable, "-I", __file__, str(os.getpid())], stdin=subprocess.PIPE,
                                cwd="/", start_new_session=True)
    _tell(f"{basetemp.resolve()}\n")
    _report_children()


def _tell(line: str) -> None:
    with _lock:
        if _watcher is None or _watcher.stdin is None or _watcher.stdin.closed:
            return
        try:
            _watcher.stdin.write(line.encode())
            _watcher.stdin.flush()
        except (OSError, ValueError):
            pass


def _report_children() -> None:
    """Each child this process starts is told to the watcher at once (one it polls for might die
    with its parent first). Popen starts every one: subprocess.run's, asyncio's (Playwright's driver)."""
    execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]
    if getattr(execute_child, "reports_to_watcher", False):
        return

    def reported(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        execute_child(self, *args, **kwargs)
        _tell(f"{self.pid}\n")

    reported.reports_to_watcher = True  # type: ignore[attr-defined]
    subprocess.Popen._execute_child = reported  # type: ignore[attr-defined]


def stop_watcher(timeout: float = 2 * STOP_GRACE) -> None:
    """The session is over: the watcher stops what still runs, and this waits until it has."""
    global _watcher
    if _watcher is None:
        return
    with _lock:
        watcher, _watcher = _watcher, None
    assert watcher.stdin is not None
    watcher.stdin.close()
    try:
        watcher.wait(timeout)
    except subprocess.TimeoutExpired:
        watcher.kill()
        watcher.wait()


def restart_postgres(pg_server: Any) -> None:
    """Restart the session's embedded PostgreSQL (a fault the pipeline recovers from), and tell
    pgserver of the new postmaster: at clean-up it stops the postmaster it knows, and only if that
    one still runs, so the restarted one ran on after the session."""
    from pgserver._commands import pg_ctl
    from pgserver.utils import PostmasterInfo

    pg_ctl(["-w", "-m", "fast", "-l", str(pg_server.log), "restart"], pgdata=pg_server.pgdata,
           user=pg_server.system_user, timeout=60)
    pg_server._postmaster_info = PostmasterInfo.read_from_pgdata(pg_server.pgdata)


def stop_postgres(pg_server: Any) -> None:
    """Stop the PostgreSQL running in the server's data directory, whichever postmaster it is now and
    whoever else pgserver counts as holding it (it stops a server only when the last pid in its
    ``.handle_pids.json`` lets go, and a killed process never takes its pid out), then let pgserver
    drop its handle."""
    from pgserver._commands import pg_ctl
    from pgserver.utils import PostmasterInfo

    running = PostmasterInfo.read_from_pgdata(pg_server.pgdata)
    if running is not None and running.is_running():
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pg_server.pgdata, user=pg_server.system_user, timeout=60)
    pg_server._postmaster_info = None  # stopped: pgserver's clean-up has nothing left to stop
    pg_server.cleanup()


# --- the watcher ----------------------------------------------------------------------------------------

def _under(basetemp: str) -> re.Pattern[str]:
    """Matches the basetemp or a path in it, not a sibling that starts alike (pytest-9, pytest-93)."""
    return re.compile(re.escape(basetemp) + r"(?=$|[/\s\"',;:=])")


def _in_basetemp(basetemp: str) -> list[Any]:
    import psutil

    inside = _under(basetemp)
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        try:
            args, cwd = proc.info["cmdline"] or [], proc.info["cwd"] or ""
        except psutil.Error:
            continue
        if inside.match(cwd) or any(inside.search(arg) for arg in args):
            found.append(proc)
    return found


def _stop(procs: list[Any]) -> list[str]:
    """A postmaster gets a fast shutdown (SIGINT: its backends end with it, its shared memory is
    released; a backend is left to it), anything else SIGTERM; what still runs after STOP_GRACE is killed.
    Answers a line for each process signalled."""
    import psutil

    alive = {}
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive[proc.pid] = proc
        except psutil.Error:
            pass
    stopped = []
    for proc in alive.values():
        try:
            if proc.name() == "postgres":
                if proc.parent() is not None and proc.parent().name() == "postgres":
                    continue
                proc.send_signal(signal.SIGINT)
            else:
                proc.terminate()
            stopped.append(f"{proc.pid} {' '.join(proc.cmdline())}")
        except psutil.Error:
            pass
    _, left = psutil.wait_procs(list(alive.values()), timeout=STOP_GRACE)
    for proc in left:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(left, timeout=STOP_GRACE)
    return stopped


def watch(parent_pid: int) -> None:
    """Note the pytest process's children (it tells each) and descendants (polled) until it has
    ended or closed this one's input, then stop what of them, and of its basetemp, still runs."""
    import psutil

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        parent: Any = psutil.Process(parent_pid)
        # pytest itself, and whatever runs it, may name the basetemp (--basetemp) but are not its servers.
        ancestors = {parent_pid, *(p.pid for p in parent.parents())}
    except psutil.NoSuchProcess:
        parent, ancestors = None, {parent_pid}
    seen: dict[int, Any] = {}  # a Process knows its start time: a pid reused later is not taken for it

    def note(proc: Any) -> None:
        seen.setdefault(proc.pid, proc)

    def note_descendants() -> bool:
        """False once the pytest process has ended."""
        try:
            if parent is None or parent.status() == psutil.STATUS_ZOMBIE:
                return False
            for child in parent.children(recursive=True):
                note(child)
        except psutil.NoSuchProcess:
            return False
        for pid in [pid for pid, proc in seen.items() if not proc.is_running()]:
            del seen[pid]
        return True

    lines, pending = [], b""
    while note_descendants():
        ready, _, _ = select.select([sys.stdin], [], [], POLL_SECONDS)
        chunk = os.read(sys.stdin.fileno(), 65536) if ready else b""
        *told, pending = (pending + chunk).split(b"\n")
        for line in told:
            lines.append(line.decode())
            if len(lines) > 1:  # the first is the basetemp, the others children's pids
                with contextlib.suppress(ValueError, psutil.NoSuchProcess):
                    note(psutil.Process(int(line)))
        if ready and not chunk:
            note_descendants()  # the pytest process closed its end (stop_watcher), or ended
            break
    basetemp = lines[0] if lines else ""
    left = [p for p in [*seen.values(), *(_in_basetemp(basetemp) if basetemp else [])]
            if p.pid not in ancestors and not _is_watcher(p)]
    stopped = _stop(left)
    if stopped:
        print(f"tests/session_servers.py: pytest process {parent_pid} left {len(stopped)} process(es) running, "
              "now stopped:\n" + "\n".join(f"  {line}" for line in stopped), file=sys.stderr, flush=True)


def _is_watcher(proc: Any) -> bool:
    import psutil

    try:
        return proc.pid == os.getpid() or __file__ in proc.cmdline()
    except psutil.Error:
        return False


if __name__ == "__main__":
    watch(int(sys.argv[1]))
