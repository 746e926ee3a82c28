"""`sluice local up` stops promptly (issue 31 item 7): told to stop (Ctrl-C, SIGINT), the stack
closes its listeners and is gone within seconds, with nothing left running: not the gateway, not
moto, not the embedded PostgreSQL, exposed or not.

The bound is generous so that a loaded machine never fails it; the stack stops in about 2 s."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from sluice.local.runtime import free_port

STOP_WITHIN = 10.0  # seconds from SIGINT to the process's exit
START_WITHIN = 240.0


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def left_running(data_dir: Path) -> list[psutil.Process]:
    """Processes whose command line names this stack's data directory (its PostgreSQL)."""
    found = []
    for proc in psutil.process_iter(attrs=["cmdline"]):
        if any(str(data_dir) in part for part in proc.info["cmdline"] or []):
            found.append(proc)
    return found


@pytest.mark.parametrize("exposed", [False, True], ids=["loopback", "exposed"])
def test_sigint_stops_the_stack_within_seconds_and_leaves_nothing_running(tmp_path: Path, exposed: bool):
    api, moto, pg = free_port(), free_port(), free_port()
    args = [sys.executable, "-m", "sluice.cli", "local", "up", "--port", str(api), "--moto-port", str(moto),
            "--data-dir", str(tmp_path)]
    if exposed:
        args += ["--expose", "127.0.0.1", "--pg-port", str(pg)]
    stack = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert stack.stdout is not None
        deadline = time.monotonic() + START_WITHIN
        printed = []
        for line in stack.stdout:
            printed.append(line)
            if "Ctrl-C stops." in line or time.monotonic() > deadline:
                break
        assert "Ctrl-C stops." in printed[-1], "".join(printed)
        ports = [api, moto, pg] if exposed else [api, moto]
        assert all(listening(p) for p in ports)

        told = time.monotonic()
        stack.send_signal(signal.SIGINT)
        try:
            stack.wait(timeout=STOP_WITHIN)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the stack was still running {STOP_WITHIN} s after SIGINT")
        took = time.monotonic() - told
        assert stack.returncode == 0, stack.stdout.read()
        print(f"stopped in {took:.2f} s")
        assert [p for p in ports if listening(p)] == []
        assert left_running(tmp_path) == []
    finally:
        if stack.poll() is None:
            stack.kill()
            stack.wait()
        for proc in left_running(tmp_path):  # what a failed run left behind: its own PostgreSQL
            proc.terminate()
