"""Where a base's embedding endpoint may point (no SSRF through embedding_base_url)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx
import pytest

from sluice.embedding.endpoints import (
    NO_USERINFO,
    NOT_HTTP,
    NOT_PUBLIC,
    EndpointNotAllowed,
    EndpointPolicy,
    endpoint_problem,
    guarded_http_client,
)

NAMES = {
    "api.example.com": ["93.184.215.14"],
    "dual.example.com": ["93.184.215.14", "10.0.0.5"],  # a public answer beside an internal one
    "ollama.internal": ["10.1.2.3"],
    "v6.example.com": ["2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    "v6-local.example.com": ["fd00::1"],
    "mapped.example.com": ["::ffff:169.254.169.254"],
    "nat64.example.com": ["64:ff9b::a9fe:a9fe"],  # 169.254.169.254 through a NAT64 gateway
    "sixtofour.example.com": ["2002:a00:1::1"],  # 6to4 of 10.0.0.1
    "nat64-public.example.com": ["64:ff9b::5db8:d70e"],  # 93.184.215.14: public either way
}


def fake_dns(host: str) -> list[str]:
    if host not in NAMES:
        raise OSError("Name or service not known")
    return NAMES[host]


def problem(url: str, allow: str = "") -> str | None:
    return endpoint_problem(url, EndpointPolicy.parse(allow), resolve=fake_dns)


@pytest.mark.parametrize("url", [
    "https://api.example.com/v1", "http://api.example.com:8080/v1", "https://v6.example.com/v1",
    "https://93.184.215.14/v1", "https://API.Example.COM./v1",
])
def test_public_endpoints_are_allowed(url):
    assert problem(url) is None


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data/",  # instance metadata
    "http://127.0.0.1:9001/2018-06-01/runtime",  # the Lambda runtime API
    "http://localhost/v1", "http://[::1]/v1", "http://[::ffff:127.0.0.1]/v1", "http://0.0.0.0/v1",
    "http://10.0.0.1/v1", "http://172.16.5.4/v1", "http://192.168.1.1/v1", "http://100.64.0.1/v1",
    "http://2852039166/v1",  # 169.254.169.254 written as one number
    "http://0x7f.1/v1",  # 127.0.0.1 in inet_aton shorthand
    "http://ollama.internal:11434/v1", "http://dual.example.com/v1", "http://v6-local.example.com/v1",
    "http://mapped.example.com/v1",
])
def test_internal_addresses_are_refused(url, monkeypatch):
    # The literal forms go through the real resolver (numbers never reach DNS); names through the fake one.
    from sluice.embedding import endpoints

    def resolve(host: str) -> list[str]:
        return fake_dns(host) if host in NAMES else endpoints.resolve_host(host)

    assert endpoint_problem(url, EndpointPolicy(), resolve=resolve) == NOT_PUBLIC


@pytest.mark.parametrize("url", [
    "http://[64:ff9b::a9fe:a9fe]/v1", "http://[64:ff9b:1::a00:1]/v1",  # NAT64, well-known and local prefixes
    "http://[2002:a9fe:a9fe::1]/v1",  # 6to4 of the metadata address
    "http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/v1",  # Teredo whose client is 10.0.0.1
    "http://[::a9fe:a9fe]/v1", "http://[::7f00:1]/v1",  # IPv4-compatible ::169.254.169.254, ::127.0.0.1
    "http://nat64.example.com/v1", "http://sixtofour.example.com/v1",
])
def test_ipv6_forms_that_carry_an_internal_ipv4_address_are_refused(url):
    # Probed: each of these passed, being global-looking IPv6 addresses.
    assert problem(url) == NOT_PUBLIC


def test_ipv6_forms_that_carry_a_public_ipv4_address_are_allowed():
    assert problem("http://nat64-public.example.com/v1") is None


@pytest.mark.parametrize("url", ["http://user@api.example.com/v1", "https://u:p@api.example.com/v1",
                                 "http://api.example.com@169.254.169.254/v1", "http://:@api.example.com/v1"])
def test_a_url_with_a_user_name_or_password_is_refused(url):
    assert problem(url) == NO_USERINFO


def test_an_unresolvable_name_is_refused():
    assert problem("https://nowhere.invalid/v1") == NOT_PUBLIC
    # the refusal reads the same as for an internal address: the API does not map the network
    assert problem("http://ollama.internal/v1") == problem("https://nowhere.invalid/v1")


@pytest.mark.parametrize("url", ["ftp://api.example.com/v1", "/v1", "api.example.com", "http://:80/v1",
                                 "http://api.example.com:port/v1", "javascript:alert(1)"])
def test_what_is_not_an_http_url_is_refused_as_such(url):
    assert problem(url) == NOT_HTTP


def test_the_operator_allows_hosts_and_ranges():
    assert problem("http://ollama.internal:11434/v1", allow="ollama.internal") is None
    assert problem("http://OLLAMA.internal./v1", allow=" Ollama.Internal ") is None
    assert problem("http://ollama.internal/v1", allow="10.1.0.0/16") is None
    assert problem("http://10.1.9.9/v1", allow="10.1.0.0/16, tei.internal") is None
    # a range allows only itself; every address of a name must be allowed
    assert problem("http://10.2.0.1/v1", allow="10.1.0.0/16") == NOT_PUBLIC
    assert problem("http://dual.example.com/v1", allow="10.1.0.0/16") == NOT_PUBLIC
    assert problem("http://dual.example.com/v1", allow="10.0.0.5/32") is None
    # a host allowed by name does not allow what another name resolves to
    assert problem("http://169.254.169.254/v1", allow="ollama.internal") == NOT_PUBLIC


# --- where the worker connects ------------------------------------------------------------------

class Recorder(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        Recorder.seen.append(self.headers["Host"])
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def loopback_server():
    srv = HTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    Recorder.seen = []
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_the_client_connects_only_to_an_address_it_checked(loopback_server):
    port = loopback_server
    answers = iter([["93.184.215.14"], ["127.0.0.1"]])  # public when configured, internal when called

    def rebinding(host: str) -> list[str]:
        return next(answers)

    url = f"http://rebind.example.com:{port}/v1"
    assert endpoint_problem(url, EndpointPolicy(), resolve=rebinding) is None
    client = guarded_http_client(EndpointPolicy(), timeout=httpx.Timeout(5.0), resolve=rebinding)
    with client, pytest.raises(EndpointNotAllowed):
        client.get(url)
    assert Recorder.seen == []


def test_an_allowed_internal_endpoint_is_reached_under_its_own_name(loopback_server):
    port = loopback_server
    policy = EndpointPolicy.parse("127.0.0.0/8")
    with guarded_http_client(policy, timeout=httpx.Timeout(5.0), resolve=lambda host: ["127.0.0.1"]) as client:
        assert client.get(f"http://tei.internal:{port}/v1").text == "ok"
    # allowed by name: resolved as usual (here it does not resolve at all), never refused by the guard
    by_name = guarded_http_client(EndpointPolicy.parse("tei.internal"), timeout=httpx.Timeout(5.0))
    with by_name, pytest.raises(httpx.ConnectError):
        by_name.get(f"http://tei.internal:{port}/v1")
    assert Recorder.seen == [f"tei.internal:{port}"]


def test_each_checked_address_is_tried_in_turn(loopback_server):
    # The server listens on 127.0.0.1 only; the other addresses refuse the connection.
    port = loopback_server
    policy = EndpointPolicy.parse("127.0.0.0/8, ::1/128")

    def get(answer: list[str]) -> str:
        with guarded_http_client(policy, timeout=httpx.Timeout(5.0), resolve=lambda host: answer) as client:
            return client.get(f"http://svc.internal:{port}/").text

    assert get(["::1", "127.0.0.1"]) == "ok"
    assert get(["127.0.0.2", "127.0.0.1"]) == "ok"
    with pytest.raises(httpx.ConnectError):
        get(["127.0.0.2", "::1"])


def test_the_client_refuses_a_name_that_now_resolves_to_nat64_of_an_internal_address(loopback_server):
    client = guarded_http_client(EndpointPolicy(), timeout=httpx.Timeout(5.0), resolve=fake_dns)
    with client, pytest.raises(EndpointNotAllowed):
        client.get(f"http://nat64.example.com:{loopback_server}/v1")
    assert Recorder.seen == []
