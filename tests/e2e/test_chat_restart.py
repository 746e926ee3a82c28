"""A restart of the local runtime in the middle of an attachment's work leaves it failed with
"Interrupted by restart", never stuck (R-CHAT-2): `sluice local up` run twice on one data directory."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from sluice.chat.recovery import OBJECTS_RESET
from sluice.local.runtime import free_port
from sluice.local.tokens import mint
from tests.chat_samples import report_pdf
from tests.conftest import ROOT
from tests.fakes import FakeChatServer, serving

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SECRET = "restart-test-secret-0123456789abcdef"


class LocalUp:
    """`sluice local up` in a process of its own, on its own ports and data directory."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        sluice = Path(sys.executable).with_name("sluice")
        self.process = subprocess.Popen(
            [str(sluice), "local", "up", "--port", str(self.port), "--data-dir", str(data_dir)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)  # its own process group, so kill() takes its PostgreSQL along
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            self.lines.put(line)

    def wait_ready(self, timeout: float = 180) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                assert self.process.poll() is None, "".join(self.output)
                continue
            if line.startswith("Sluice API:"):
                return line.split(":", 1)[1].strip()
        raise AssertionError("sluice local up did not start:\n" + "".join(self.output[-50:]))

    def kill(self) -> None:
        """The stack dies where it stands (SIGKILL to its group), as a killed Lambda would."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def test_a_restart_mid_summary_leaves_the_attachment_failed_with_the_reason(tmp_path: Path):
    with serving(FakeChatServer()) as server:
        server.hold.clear()  # every model call waits: the worker is stopped mid-summary
        env = {**os.environ, "SLUICE_DEV_JWT_SECRET": SECRET, "CHAT_MODEL_PROVIDER": "openai",
               "CHAT_MODEL": "fake-model", "CHAT_MODEL_BASE_URL": server.base_url,
               "EMBEDDING_ALLOWED_ENDPOINTS": "127.0.0.1", "HF_HUB_OFFLINE": "1",
               # a short document is indexed (and so summarised) when the full-text tier is small
               "CHAT_FULL_TEXT_MAX_TOKENS": "500"}
        for name in ("AWS_ENDPOINT_URL", "DATABASE_URL", "MOTO_PORT"):  # the session runtime's, not this one's
            env.pop(name, None)
        token = mint(SECRET, user="rita")
        headers = {"Authorization": f"Bearer {token}"}

        first = LocalUp(tmp_path, env)
        try:
            url = first.wait_ready()
            api = httpx.Client(base_url=url, headers=headers, timeout=60)
            f = api.post("/files/upload", files={"file": ("report.pdf", report_pdf(6))}).json()
            notes = api.post("/files/upload", files={"file": ("notes.txt", b"Harbour notes\n")}).json()
            assert httpx.get(api.get(f"/files/{notes['id']}").json()["download"]["url"]).content == b"Harbour notes\n"
            cid = api.post("/conversations", json={}).json()["id"]
            att = api.post(f"/conversations/{cid}/attachments", json={"file_id": f["id"]}).json()
            deadline = time.monotonic() + 240
            while True:
                listed = api.get(f"/conversations/{cid}/attachments").json()["attachments"][0]
                if listed["status"] == "summarizing" and server.arrived:
                    break
                assert listed["status"] in ("reading", "indexing", "summarizing"), listed
                assert time.monotonic() < deadline, listed
                time.sleep(0.3)
            assert listed["label"].startswith("summarizing 0/")
        finally:
            # Killed, not stopped: a graceful stop waited up to a minute for the held model call.
            first.kill()
            server.hold.set()

        second = LocalUp(tmp_path, env)
        try:
            api = httpx.Client(base_url=second.wait_ready(), headers=headers, timeout=60)
            after = api.get(f"/conversations/{cid}/attachments").json()["attachments"]
            assert [(a["id"], a["status"], a["error_message"]) for a in after] == [
                (att["id"], "failed", "Interrupted by restart")]
            assert after[0]["progress"] is None and after[0]["label"] == "failed"
            # The objects were in moto's memory: a stored file says its original is gone, and hands
            # out no link to nothing; attaching it answers why.
            row = api.get(f"/files/{notes['id']}").json()
            assert (row["status"], row["error_message"], row["download"]) == ("failed", OBJECTS_RESET, None)
            refused = api.post(f"/conversations/{cid}/attachments", json={"file_id": notes["id"]})
            assert refused.status_code == 409 and OBJECTS_RESET in refused.json()["error"]["message"]
        finally:
            second.stop()
        # The second stack adopted the PostgreSQL the killed one left running, and stopping it stops that too.
        assert not (tmp_path / "pgdata" / "postmaster.pid").exists(), "".join(second.output[-20:])
