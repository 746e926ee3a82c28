"""Where a source connector may connect (R-SYNC-6, R-SYNC-7): public addresses for web and git, the
documented hosts for a SaaS connector, and what the operator lists in SYNC_ALLOWED_HOSTS for both."""

from __future__ import annotations

import http.server
import threading

import httpx
import pytest

from sluice.config import SyncSettings
from sluice.outbound import OutboundPolicy
from sluice.sync.outbound import (
    NOT_HTTPS,
    SENTENCES,
    EndpointNotAllowed,
    guarded_client,
    saas_url_problem,
    sync_policy,
    url_problem_for_source,
)

DNS = {"docs.example.com": ["93.184.216.34"], "intranet.corp": ["10.1.2.3"],
       "contoso.sharepoint.com": ["13.107.136.9"], "evil.example.com": ["169.254.169.254"]}


def fake_dns(host: str) -> list[str]:
    if host not in DNS:
        raise OSError("no such host")
    return DNS[host]


def test_the_operator_list_is_the_setting():
    policy = sync_policy(SyncSettings.model_validate({"SYNC_ALLOWED_HOSTS": "intranet.corp, 127.0.0.0/8"}))
    assert policy.hosts == frozenset({"intranet.corp"})
    assert [str(n) for n in policy.networks] == ["127.0.0.0/8"]


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:8080/",
                                 "http://[::ffff:10.0.0.1]/", "http://intranet.corp/", "http://evil.example.com/",
                                 "http://nowhere.invalid/"])
def test_a_web_source_reaches_no_internal_address_by_default(url):
    assert url_problem_for_source(url, OutboundPolicy(), resolve=fake_dns) == SENTENCES.not_public


def test_a_listed_host_or_range_is_reachable():
    policy = OutboundPolicy.parse("intranet.corp,127.0.0.0/8")
    assert url_problem_for_source("http://intranet.corp/handbook", policy, resolve=fake_dns) is None
    assert url_problem_for_source("http://127.0.0.1:9000/", policy, resolve=fake_dns) is None
    assert url_problem_for_source("https://docs.example.com/", OutboundPolicy(), resolve=fake_dns) is None


def test_git_takes_plain_http_only_from_a_listed_host():
    assert url_problem_for_source("http://docs.example.com/repo.git", OutboundPolicy(), https_only=True,
                                  resolve=fake_dns) == NOT_HTTPS
    assert url_problem_for_source("https://docs.example.com/repo.git", OutboundPolicy(), https_only=True,
                                  resolve=fake_dns) is None
    assert url_problem_for_source("http://127.0.0.1:9000/repo.git", OutboundPolicy.parse("127.0.0.1/32"),
                                  https_only=True, resolve=fake_dns) is None


def test_credentials_in_the_url_are_refused():
    assert url_problem_for_source("https://user:pw@docs.example.com/", OutboundPolicy(),
                                  resolve=fake_dns) == SENTENCES.userinfo


def test_a_saas_connector_reaches_only_its_documented_hosts_or_the_listed_ones():
    documented = ("graph.microsoft.com", "login.microsoftonline.com", "*.sharepoint.com")
    assert saas_url_problem("https://graph.microsoft.com/v1.0/sites", documented, OutboundPolicy()) is None
    assert saas_url_problem("https://contoso.sharepoint.com/x", documented, OutboundPolicy()) is None
    refused = saas_url_problem("https://docs.example.com/v1.0", documented, OutboundPolicy(), resolve=fake_dns)
    assert refused is not None and "graph.microsoft.com" in refused and "SYNC_ALLOWED_HOSTS" in refused
    # a documented host over plain http is not the service
    assert saas_url_problem("http://graph.microsoft.com/v1.0", documented, OutboundPolicy()) is not None
    # "sharepoint.com.evil.example" must not pass as *.sharepoint.com
    assert saas_url_problem("https://contoso.sharepoint.com.evil.example/", documented, OutboundPolicy()) is not None
    # a test double on loopback, listed by the operator
    assert saas_url_problem("http://127.0.0.1:8123/v1.0", documented, OutboundPolicy.parse("127.0.0.0/8")) is None


@pytest.fixture
def loopback_site():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            if self.path == "/hop":
                self.send_response(302)
                self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
                self.end_headers()
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"hello")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_client_connects_only_where_allowed_and_checks_every_redirect_hop(loopback_site):
    timeout = httpx.Timeout(2.0)
    with guarded_client(OutboundPolicy(), timeout=timeout) as client, pytest.raises(EndpointNotAllowed):
        client.get(loopback_site + "/")
    with guarded_client(OutboundPolicy.parse("127.0.0.0/8"), timeout=timeout, max_redirects=5,
                        user_agent="SluiceBot/1 (+https://example.org/bot)") as client:
        assert client.get(loopback_site + "/").text == "hello"
        with pytest.raises(EndpointNotAllowed):
            client.get(loopback_site + "/hop")  # the second hop is the metadata address
