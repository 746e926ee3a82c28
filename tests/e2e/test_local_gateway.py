"""The local gateway is the developer's machine's front door: it takes only requests addressed to
loopback, decides on a body from its headers before reading it, and trusts only tokens signed with
its data directory's own secret."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from sluice.local.tokens import SECRET_FILE, mint
from tests.e2e.test_upload_to_search import wait_done

pytestmark = pytest.mark.e2e

OLD_PUBLIC_SECRET = "sluice-local-dev-secret-change-me-0123456789"


def raw_request(runtime, head: str, timeout: float = 10) -> bytes:
    """Send request headers (and nothing else) and read the answer: a gateway that waited for the
    body it was promised would time out here."""
    with socket.create_connection(("127.0.0.1", runtime.api_port), timeout=timeout) as s:
        s.sendall(head.encode())
        return s.recv(65536)


def test_a_request_for_another_host_is_refused(runtime, make_token):
    token = make_token("alice")
    for host in ("evil.example", "evil.example:8787", "127.0.0.1.evil.example"):
        resp = httpx.get(f"{runtime.api_url}/kb", headers={"Host": host, "Authorization": f"Bearer {token}"})
        assert resp.status_code == 403 and resp.json()["error"]["code"] == "FORBIDDEN", host
    for host in (f"127.0.0.1:{runtime.api_port}", "localhost", f"[::1]:{runtime.api_port}"):
        resp = httpx.get(f"{runtime.api_url}/kb", headers={"Host": host, "Authorization": f"Bearer {token}"})
        assert resp.status_code == 200, host


@pytest.mark.parametrize("length, status", [("-1", b"400"), ("ten", b"400"), (str(11 * 1024 * 1024), b"413")])
def test_a_body_length_is_judged_before_the_body_is_read(runtime, length, status):
    answer = raw_request(runtime, f"POST /kb HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {length}\r\n\r\n")
    assert answer.split(b" ")[1] == status, answer[:200]


def test_a_chunked_body_is_refused(runtime):
    answer = raw_request(runtime, "POST /kb HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert answer.split(b" ")[1] == b"411", answer[:200]


def test_tokens_are_signed_with_the_data_directorys_own_secret(runtime):
    secret_file = runtime.data_dir / SECRET_FILE
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    assert secret_file.read_text().strip() != OLD_PUBLIC_SECRET
    forged = mint(OLD_PUBLIC_SECRET, user="alice", app_admin=True)
    assert httpx.get(f"{runtime.api_url}/kb", headers={"Authorization": f"Bearer {forged}"}).status_code == 401
    # `sluice local token` signs with the secret of the data directory it is pointed at
    env = {k: v for k, v in os.environ.items() if k != "SLUICE_DEV_JWT_SECRET"}
    minted = subprocess.run([sys.executable, "-m", "sluice.cli", "local", "token", "--user", "alice",
                             "--data-dir", str(runtime.data_dir)], capture_output=True, text=True, check=True,
                            env=env).stdout.strip()
    assert httpx.get(f"{runtime.api_url}/kb", headers={"Authorization": f"Bearer {minted}"}).status_code == 200


def _unsigned(claims: dict) -> str:
    import base64
    import json

    def part(d: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


def test_tokens_that_are_forged_unsigned_expired_or_incomplete_are_401(runtime):
    import time

    import jwt

    from sluice.config import get_settings
    from sluice.local.tokens import AUDIENCE, ISSUER

    now = int(time.time())
    good = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600, "is_app_admin": True}
    secret = get_settings().dev_jwt_secret
    cases = {
        "wrong signature": jwt.encode(good, "another-secret-of-at-least-32-bytes!!", algorithm="HS256"),
        "alg none": _unsigned(good),
        "expired": jwt.encode({**good, "exp": now - 60}, secret, algorithm="HS256"),
        "no subject": jwt.encode({k: v for k, v in good.items() if k != "sub"}, secret, algorithm="HS256"),
        "no expiry": jwt.encode({k: v for k, v in good.items() if k != "exp"}, secret, algorithm="HS256"),
        "another audience": jwt.encode({**good, "aud": "elsewhere"}, secret, algorithm="HS256"),
    }
    for why, token in cases.items():
        resp = httpx.get(f"{runtime.api_url}/kb", headers={"Authorization": f"Bearer {token}"})
        assert resp.status_code == 401 and resp.json()["error"]["code"] == "UNAUTHORIZED", why
    # identity claimed in headers, without a token, is nobody
    spoof = {"x-user-id": "alice", "x-org-id": "acme", "x-amzn-oidc-identity": "alice", "x-is-app-admin": "true"}
    assert httpx.get(f"{runtime.api_url}/kb", headers=spoof).status_code == 401
    signed = jwt.encode(good, secret, algorithm="HS256")
    assert httpx.get(f"{runtime.api_url}/kb", headers={"Authorization": f"Bearer {signed}"}).status_code == 200


def test_uploads_sent_at_once_each_keep_their_own_name_and_bytes(runtime, client_for):
    # The gateway runs a function's environments as threads of one process; Powertools keeps the
    # event being handled on a class, so two requests at once read one another's (seen in CI: a file
    # came back done with another's chunks). Each upload must keep its own name and its own bytes.
    api = client_for(f"pairs_{uuid.uuid4().hex[:6]}")
    kb = api.post("/kb", json={"name": "Pairs"}).json()
    names = [f"note-{i:02d}.txt" for i in range(8)]  # under the upload rate limit (10 a minute)

    def send(name: str) -> dict:
        body = f"This note is {name} and nothing else: marker {name.replace('.', '-')}.".encode()
        resp = api.post(f"/kb/{kb['id']}/documents", files={"file": (name, body)})
        assert resp.status_code == 202, resp.text
        return resp.json()

    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        accepted = dict(zip(names, pool.map(send, names), strict=True))

    assert {name: body["filename"] for name, body in accepted.items()} == {name: name for name in names}
    for name, body in accepted.items():
        doc = wait_done(api, body["id"])
        assert (doc["status"], doc["filename"]) == ("done", name), doc
        text = api.get(f"/rag/documents/{body['id']}/content").json()["content"]
        assert f"marker {name.replace('.', '-')}." in text and text.count("marker") == 1, (name, text)
