"""The local runtime keeps PostgreSQL on disk but its object store and queues in memory: after a
restart a document that was in flight can never move again. It must say so, never stay processing.

The stack runs as `sluice local up` in a process of its own, killed (SIGKILL) with an upload in
flight, then started again on the same data directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from sluice.ingest.recovery import LOCAL_RESET
from sluice.local.runtime import free_port
from sluice.local.tokens import mint

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def local_up(data: Path, port: int, *extra: str) -> tuple[subprocess.Popen[str], list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLUICE_", "AWS_", "DATABASE_", "MOTO_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "sluice.cli", "local", "up", "--data-dir", str(data), "--port", str(port),
         "--moto-port", str(free_port()), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    lines: list[str] = []
    deadline = time.monotonic() + 120
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError("local up ended:\n" + "".join(lines))
        lines.append(line)
        if line.startswith("Ctrl-C stops."):
            return process, lines
    raise AssertionError("local up did not start:\n" + "".join(lines))


def kill(process: subprocess.Popen[str]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_a_document_in_flight_when_the_stack_is_killed_is_an_error_with_a_sentence_after_it_starts(tmp_path):
    data, port = tmp_path / "data", free_port()
    first, _ = local_up(data, port, "--no-pumps")
    try:
        api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                           headers={"Authorization": f"Bearer {mint((data / 'jwt-secret').read_text(), user='rita')}"})
        kb = api.post("/kb", json={"name": "Restart"}).json()
        accepted = api.post(f"/kb/{kb['id']}/documents", files={"file": ("notes.md", b"# Notes\n\nwords\n")}).json()
        assert accepted["status"] == "processing"
    finally:
        kill(first)  # the upload's message and stored object die with this moto

    second, lines = local_up(data, port)
    try:
        assert any(line.startswith("Restarted:") and "1 document(s) in flight were marked error" in line
                   for line in lines), lines
        doc = api.get(f"/rag/documents/{accepted['id']}").json()
        assert (doc["status"], doc["error_message"]) == ("error", LOCAL_RESET)
        assert api.get(f"/kb/{kb['id']}/ingestion").json()["indexing_status"] == "complete"
    finally:
        second.send_signal(signal.SIGTERM)  # Ctrl-C's stop: it stops the PostgreSQL the killed stack left running
        second.wait(timeout=90)
    assert not (data / "pgdata" / "postmaster.pid").exists(), "the embedded PostgreSQL outlived both stacks"
