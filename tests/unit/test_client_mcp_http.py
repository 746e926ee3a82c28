"""Issue 37 item 6: `sluice mcp --host` other than loopback dropped the MCP transport's DNS-rebinding
checks (on 127.0.0.2 a forged Host and Origin both got 200 and a session), and `initialize` needs no
token, so one client could fill all 10,000 sessions. Now the checks always apply (the bound host and
port allowed, origins only as configured) and each client holds a bounded number of sessions."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'sluice-client[mcp]')")
from sluice_client import mcp_server  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "probe", "version": "1"}}}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def app(host: str = "127.0.0.2", port: int = 8765, **options):
    args = mcp_server.parser().parse_args(["--api", "http://sluice.test", "--transport", "streamable-http",
                                           "--host", host, "--port", str(port), *options.get("argv", [])])
    return mcp_server.http_app(args)


def initialize(client: TestClient, **headers: str):
    return client.post("/mcp", json=INITIALIZE, headers={**HEADERS, **headers})


def test_a_forged_host_or_origin_is_refused_on_a_host_other_than_loopback():
    with TestClient(app(), base_url="http://127.0.0.2:8765") as client:
        assert initialize(client, host="attacker.example").status_code == 421
        assert initialize(client, origin="http://attacker.example").status_code == 403
        ok = initialize(client)
        assert ok.status_code == 200 and ok.headers.get("mcp-session-id")


def test_origins_are_allowed_only_as_configured_and_more_host_names_may_be_named():
    argv = ["--allowed-origin", "https://app.example", "--allowed-host", "mcp.example"]
    with TestClient(app(host="0.0.0.0", argv=argv), base_url="http://mcp.example") as client:
        assert initialize(client, origin="https://app.example").status_code == 200
        assert initialize(client, origin="https://other.example").status_code == 403
        assert initialize(client, host="10.0.0.5:8765").status_code == 421


def test_one_client_holds_a_bounded_number_of_sessions():
    with TestClient(app(argv=["--sessions-per-client", "2"]), base_url="http://127.0.0.2:8765") as client:
        first, second = initialize(client), initialize(client)
        assert first.status_code == second.status_code == 200
        third = initialize(client)
        assert third.status_code == 429
        assert "at most 2 open sessions" in third.text
        # closing one makes room
        closed = client.delete("/mcp", headers={**HEADERS, "mcp-session-id": first.headers["mcp-session-id"],
                                                "mcp-protocol-version": "2025-06-18"})
        assert closed.status_code in (200, 204)
        assert initialize(client).status_code == 200
