"""Real servers for the connectors' tests and benchmarks, started on loopback like moto.

* :class:`GitServer`: git's own ``git http-backend`` behind a small CGI shim that requires a token
  (HTTP Basic) and logs each request: its command (ls-refs, fetch), the objects it wanted, the bytes
  answered.
* :class:`Azurite`: Microsoft's Azure Storage emulator (npm ``azurite``, which ``make install`` puts
  in the venv's ``node`` folder).
* :class:`GcsEmulator`: ``gcp-storage-emulator`` (PyPI), which google-cloud-storage talks to.

Each skips with a sentence where its program is absent.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {timeout} s")


# --- git ---------------------------------------------------------------------------------------------

@dataclass
class GitRequest:
    method: str
    path: str
    command: str | None
    wants: list[str]
    status: int
    sent: int


def _pkt_lines(body: bytes) -> Iterator[str]:
    i = 0
    while i + 4 <= len(body):
        try:
            size = int(body[i:i + 4], 16)
        except ValueError:
            return
        if size < 4:
            i += 4
            continue
        yield body[i + 4:i + size].decode(errors="replace").rstrip("\n")
        i += size


@dataclass
class GitServer:
    """A bare repository served by ``git http-backend`` at ``url``, a work tree to commit from."""

    root: Path
    token: str = "s3cret-token"
    log: list[GitRequest] = field(default_factory=list)
    allow_filter: bool = True
    # statuses to answer the next requests with, before serving them (429, 503: a busy server)
    busy: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.bare = self.root / "repo.git"
        self.work = self.root / "work"
        self._git("init", "--quiet", "--bare", "--initial-branch=main", str(self.bare), cwd=self.root)
        self._git("config", "uploadpack.allowFilter", "true" if self.allow_filter else "false", cwd=self.bare)
        self._git("init", "--quiet", "--initial-branch=main", str(self.work), cwd=self.root)
        for key, value in (("user.name", "Test"), ("user.email", "test@example.com"), ("commit.gpgsign", "false")):
            self._git("config", key, value, cwd=self.work)
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server._serve(self, b"")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server._serve(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/repo.git"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    @staticmethod
    def _git(*args: str, cwd: Path) -> str:
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                              text=True).stdout.strip()

    def _serve(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        path, _, query = h.path.partition("?")
        expected = "Basic " + base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        lines = list(_pkt_lines(body))
        command = next((ln.removeprefix("command=") for ln in lines if ln.startswith("command=")), None)
        wants = [ln.split()[1] for ln in lines if ln.startswith("want ")]
        with self._lock:
            busy = self.busy.pop(0) if self.busy else None
        if busy is not None:
            with self._lock:
                self.log.append(GitRequest(h.command, path, command, wants, busy, 0))
            h.send_response(busy)
            h.send_header("Retry-After", "0")
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        if h.headers.get("Authorization") != expected:
            with self._lock:
                self.log.append(GitRequest(h.command, path, command, wants, 401, 0))
            h.send_response(401)
            h.send_header("WWW-Authenticate", 'Basic realm="git"')
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": str(self.root),
               "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path, "QUERY_STRING": query,
               "REQUEST_METHOD": h.command, "CONTENT_TYPE": h.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": "reader", "REMOTE_ADDR": "127.0.0.1",
               "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        if h.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = h.headers["Git-Protocol"]
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode(errors="replace").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        with self._lock:  # logged before it is answered: a client that has its answer finds it in the log
            self.log.append(GitRequest(h.command, path, command, wants, status, len(payload)))
        h.send_response(status)
        for name, value in headers:
            h.send_header(name, value)
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    def commit(self, files: dict[str, bytes | None], message: str = "change") -> str:
        """Write (bytes) or delete (None) files in the work tree, commit, push; answers the commit id."""
        for name, data in files.items():
            target = self.work / name
            if data is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        if files:
            self._git("add", "-A", "--", *files, cwd=self.work)
        self._git("commit", "--quiet", "--allow-empty", "-m", message, cwd=self.work)
        self._git("push", "--quiet", "--force", str(self.bare), "HEAD:refs/heads/main", cwd=self.work)
        return self._git("rev-parse", "HEAD", cwd=self.work)

    def amend_force_push(self, files: dict[str, bytes | None]) -> str:
        """Rewrite the last commit (a force-push): the old commit is no longer on the branch."""
        for name, data in files.items():
            target = self.work / name
            if data is None:
                target.unlink()
            else:
                target.write_bytes(data)
        self._git("add", "-A", "--", *files, cwd=self.work)
        self._git("commit", "--quiet", "--amend", "--allow-empty", "-m", "rewritten", cwd=self.work)
        self._git("push", "--quiet", "--force", str(self.bare), "HEAD:refs/heads/main", cwd=self.work)
        return self._git("rev-parse", "HEAD", cwd=self.work)

    def blob_id(self, path: str) -> str:
        return self._git("rev-parse", f"HEAD:{path}", cwd=self.work)

    def git(self, *args: str) -> str:
        return self._git(*args, cwd=self.work)

    def requests_since(self, n: int) -> list[GitRequest]:
        with self._lock:
            return list(self.log[n:])

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def git_server(root: Path | None = None, **kwargs: Any) -> GitServer:
    if shutil.which("git") is None:
        import pytest

        pytest.skip("git is not installed: the git connector's tests run git http-backend as the server")
    return GitServer(Path(root or tempfile.mkdtemp(prefix="sluice-git-")), **kwargs)


# --- Azurite -------------------------------------------------------------------------------------------

AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's documented development key (not a secret: every Azurite install answers to it).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="  # noqa: S105


def azurite_program() -> str | None:
    for candidate in (ROOT / ".venv" / "node" / "node_modules" / ".bin" / "azurite-blob",
                      Path(sys.prefix) / "node" / "node_modules" / ".bin" / "azurite-blob"):
        if candidate.exists() and shutil.which("node"):
            return str(candidate)
    return shutil.which("azurite-blob") if shutil.which("node") else None


class Azurite:
    """Azurite's blob service on a free loopback port, its data in a temporary folder."""

    def __init__(self) -> None:
        program = azurite_program()
        if program is None:
            import pytest

            pytest.skip("Azurite is not installed (node/npm absent, or `make install` has not run): the "
                        "azure_blob connector is tested against Azurite only")
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="sluice-azurite-")
        self.proc = subprocess.Popen(
            [program, "--blobHost", "127.0.0.1", "--blobPort", str(self.port), "--location", self.dir,
             "--silent", "--skipApiVersionCheck", "--loose"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)
        self.endpoint = f"http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT}"

    def service(self) -> Any:
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient(self.endpoint, credential={"account_name": AZURITE_ACCOUNT,
                                                            "account_key": AZURITE_KEY})

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- GCS -------------------------------------------------------------------------------------------------

class GcsEmulator:
    """gcp-storage-emulator on a free loopback port, in memory."""

    def __init__(self) -> None:
        try:
            from gcp_storage_emulator.server import create_server
        except ImportError:
            import pytest

            pytest.skip("gcp-storage-emulator is not installed (`make install` installs it): the gcs connector "
                        "is tested against it only")
        self.port = free_port()
        self.server = create_server("127.0.0.1", self.port, in_memory=True)
        self.server.start()
        wait_port(self.port)
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def client(self) -> Any:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        return storage.Client(project="test", credentials=AnonymousCredentials(),
                              client_options={"api_endpoint": self.endpoint})

    def close(self) -> None:
        self.server.stop()


class TokenEndpoint:
    """Google's OAuth token endpoint's part in a service account's sign-in, on loopback: it takes the
    signed assertion a key makes (counting them) and answers an access token."""

    def __init__(self) -> None:
        self.assertions: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                from urllib.parse import parse_qs

                form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode())
                owner.assertions += form.get("assertion", [])
                body = b'{"access_token": "loopback-token", "expires_in": 3600, "token_type": "Bearer"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/token"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def service_account_key(token_uri: str) -> dict[str, str]:
    """A service account's JSON key with a fresh RSA key, its token endpoint ``token_uri``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return {"type": "service_account", "project_id": "test", "private_key_id": "k1", "private_key": pem,
            "client_email": "sync@test.iam.gserviceaccount.com", "client_id": "1", "token_uri": token_uri}
