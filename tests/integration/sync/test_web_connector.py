"""The web connector against a real HTTP server on loopback (tests/web_site.py logs every request it
received): robots.txt, sitemaps, scope and patterns, the outbound guard at every hop, and what a
second crawl asks (only conditional requests, 304s, nothing for a page the sitemap dates unchanged).
What a run does with the listing (decide, fetch, embed, remove) is in test_web_sync.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from sluice.config import SyncContextSettings
from sluice.retry import RetryPolicy
from sluice.sync.connectors import CONNECTORS, RemoteListing
from sluice.sync.connectors.web import WebConfig, WebConnector
from sluice.sync.connectors.web.crawl import (
    OUT_OF_SCOPE,
    ROBOTS,
    UNCHANGED_304,
    UNCHANGED_LASTMOD,
    UNCHANGED_TEXT,
)
from tests.web_site import Resource, Site, html, sitemap, sitemap_index

FAST = {"WEB_MAX_RATE_PER_MINUTE": "600000"}
LOOPBACK = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": "127.0.0.0/8", **FAST})


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    yield s
    s.close()


def connector(site: Site, state: dict | None = None, settings: SyncContextSettings = LOOPBACK,
              resolve: Any = None, **config: Any) -> WebConnector:
    cfg = WebConnector.parse_config({"seed_urls": [site.url("/")], "rate_limit": 600000, **config})
    assert isinstance(cfg, WebConfig)
    refusal = WebConnector.check(cfg, settings)
    assert refusal is None, refusal
    if resolve is not None:
        return WebConnector(cfg, settings, state or {}, resolve=resolve)
    return WebConnector.open(cfg, None, external_id="x", settings=settings, client_factory=None, state=state or {})


def outcomes(listing: RemoteListing) -> dict[str, str]:
    """path -> "page" | "ignored: ..." | "failed: ..." """
    out = {}
    for f in listing.files:
        path = f.source_path.split(":", 2)[2].split("/", 1)[1] if f.source_path.count(":") >= 2 else f.source_path
        out["/" + path] = f"failed: {f.failure}" if f.failure else f"ignored: {f.note}" if f.note else "page"
    return out


def small_site(site: Site) -> None:
    site.page("/", html("Home", "<p>Welcome home words.</p>", links=["/guide/", "/about", "https://elsewhere.test/x"]))
    site.page("/guide/", html("Guide", "<p>Guide words.</p>", links=["/guide/install", "/"]))
    site.page("/guide/install", html("Install", "<p>Install with make.</p>", links=["/guide/"]))
    site.page("/about", html("About", "<p>About us.</p>"))


def test_the_connector_is_registered_needs_no_secret_and_publishes_its_schema():
    assert CONNECTORS["web"] is WebConnector and WebConnector.SECRET_KIND is None
    schema = WebConfig.model_json_schema()
    assert {"seed_urls", "scope", "include", "exclude", "sitemap", "max_pages", "max_depth", "rate_limit",
            "follow_documents"} <= set(schema["properties"])


def test_refusals_name_their_field():
    def refusal(config: dict, settings: SyncContextSettings = LOOPBACK) -> tuple[str | None, str] | None:
        r = WebConnector.validate_config(config, settings)
        return None if r is None else (r.field, r.message)

    assert refusal({"seed_urls": []})[0] == "seed_urls"
    assert refusal({"seed_urls": ["ftp://x/"]})[0] == "seed_urls"
    assert refusal({"seed_urls": ["http://169.254.169.254/"]})[0] == "seed_urls[0]"
    assert refusal({"seed_urls": ["http://127.0.0.1/"]}, SyncContextSettings.model_validate({}))[0] == "seed_urls[0]"
    assert refusal({"seed_urls": ["http://127.0.0.1/"], "include": ["(a)\\1"]})[0] == "include"
    assert "RE2" in refusal({"seed_urls": ["http://127.0.0.1/"], "exclude": ["(?=x)"]})[1]
    assert refusal({"seed_urls": ["http://127.0.0.1/"], "max_pages": 10**6})[0] == "max_pages"
    assert refusal({"seed_urls": ["http://127.0.0.1/"], "rate_limit": 10**7})[0] == "rate_limit"
    assert refusal({"seed_urls": ["http://127.0.0.1/"], "api_token": "x"})[0] == "api_token"
    assert refusal({"seed_urls": ["http://127.0.0.1/"], "sitemap": "http://10.0.0.1/s.xml"})[0] == "sitemap"


def test_a_crawl_lists_each_page_once_by_its_canonical_url_and_reports_what_it_left(site: Site):
    small_site(site)
    site.page("/about", html("About", "<p>About us.</p>", links=["/About#team", "/about#x", "/guide/?"]))
    c = connector(site, scope="host")
    listing = c.list_files()
    assert listing.complete, listing.problem
    assert c.transfer() == (len(site.log), c.fetcher.totals.bytes) and c.fetcher.totals.bytes > 0
    got = outcomes(listing)
    assert {p for p, o in got.items() if o == "page"} == {"/", "/guide/", "/guide/install", "/about"}
    assert got.get("/About") is not None  # another path (case matters in a path): tried, 404, said
    assert [f.source_path for f in listing.files].count(site.url("/about")) == 1
    pages = {f.source_path: f for f in listing.files if not f.note}
    assert pages[site.url("/guide/install")].key.endswith("/guide-install.md")
    assert pages[site.url("/")].etag.startswith("text:")


def test_robots_disallow_is_obeyed_and_reported_and_nothing_is_fetched_there(site: Site):
    small_site(site)
    site.page("/robots.txt", "User-agent: *\nDisallow: /guide/install\n", content_type="text/plain")
    listing = connector(site, scope="host").list_files()
    assert outcomes(listing)["/guide/install"] == f"ignored: {ROBOTS}"
    assert "/guide/install" not in site.paths()
    assert listing.complete


def test_crawl_delay_is_honoured(site: Site):
    site.page("/robots.txt", "User-agent: *\nCrawl-delay: 0.3\n", content_type="text/plain")
    site.page("/", html("Home", "<p>x</p>", links=["/a", "/b"]))
    site.page("/a", html("A", "<p>a</p>"))
    site.page("/b", html("B", "<p>b</p>"))
    started = time.monotonic()
    assert connector(site, sitemap="off").list_files().complete
    assert time.monotonic() - started >= 0.3 * 3  # robots, /, /a, /b: three gaps at least


def test_a_sitemap_index_with_lastmod_drives_the_crawl_and_lastmod_skips_the_request(site: Site):
    site.page("/robots.txt", f"User-agent: *\nSitemap: {site.url('/sitemap_index.xml.gz')}\n",
              content_type="text/plain")
    site.page("/sitemap_index.xml.gz", sitemap_index([(site.url("/sm1.xml"), "2026-01-01")], gz=True),
              content_type="application/gzip")
    site.page("/sm1.xml", sitemap([(site.url("/orphan"), "2026-01-02"), (site.url("/"), "2026-01-02")]),
              content_type="application/xml")
    site.page("/", html("Home", "<p>home</p>"))
    site.page("/orphan", html("Orphan", "<p>Only the sitemap links here.</p>"))
    first = connector(site).list_files()
    assert outcomes(first)["/orphan"] == "page"
    before = len(site.log)
    again = connector(site, state=first.state).list_files()
    assert again.complete
    assert "/orphan" not in site.paths(before) and "/" not in site.paths(before)
    assert {f.hint for f in again.files} == {UNCHANGED_LASTMOD}
    # a newer lastmod asks again (conditionally)
    site.page("/sm1.xml", sitemap([(site.url("/orphan"), "2026-02-01"), (site.url("/"), "2026-01-02")]),
              content_type="application/xml")
    before = len(site.log)
    third = connector(site, state=again.state).list_files()
    assert site.paths(before).count("/orphan") == 1
    assert next(f.hint for f in third.files if f.source_path.endswith("/orphan")) == UNCHANGED_304


def test_a_second_crawl_makes_only_conditional_requests_and_gets_only_304s(site: Site):
    small_site(site)
    first = connector(site, scope="host", sitemap="off").list_files()
    before = len(site.log)
    again = connector(site, scope="host", sitemap="off", state=first.state).list_files()
    assert again.complete
    hits = [h for h in site.log[before:] if h.path != "/robots.txt"]
    assert hits and all("If-None-Match" in h.headers for h in hits)
    assert {h.status for h in hits} == {304}
    assert {f.source_path: f.etag for f in again.files if not f.note} == \
        {f.source_path: f.etag for f in first.files if not f.note}
    assert {f.hint for f in again.files if not f.note} == {UNCHANGED_304}


def test_markup_only_changes_keep_the_text_signal(site: Site):
    site.validators = False
    site.page("/", html("Home", '<p>Same words.</p><input type=hidden name=csrf value="111">',
                        extra_head='<meta name="nonce" content="aaa">'))
    first = connector(site, sitemap="off").list_files()
    site.page("/", html("Home", '<p>Same words.</p><input type=hidden name=csrf value="222">',
                        extra_head='<meta name="nonce" content="bbb"><script>var t=2</script>'))
    again = connector(site, sitemap="off", state=first.state).list_files()
    assert again.files[0].etag == first.files[0].etag and again.files[0].hint == UNCHANGED_TEXT
    site.page("/", html("Home", "<p>Other words.</p>"))
    third = connector(site, sitemap="off", state=again.state).list_files()
    assert third.files[0].etag != first.files[0].etag and third.files[0].hint is None


def test_max_pages_cuts_the_listing_which_is_then_not_whole(site: Site):
    site.page("/", html("Home", "<p>x</p>", links=[f"/p{i}" for i in range(10)]))
    for i in range(10):
        site.page(f"/p{i}", html(f"P{i}", f"<p>page {i}</p>"))
    listing = connector(site, max_pages=4, sitemap="off").list_files()
    assert not listing.complete and "max_pages" in listing.problem
    assert len([f for f in listing.files if not f.note]) == 4


def test_a_page_gone_is_left_out_after_a_whole_crawl_and_a_5xx_makes_it_incomplete(site: Site):
    small_site(site)
    first = connector(site, scope="host", sitemap="off").list_files()
    del site.pages["/about"]
    gone = connector(site, scope="host", sitemap="off", state=first.state).list_files()
    assert gone.complete and "/about" not in outcomes(gone)
    site.page("/guide/", "", status=500)
    broken = connector(site, scope="host", sitemap="off", state=first.state)
    broken.fetcher.retry = RetryPolicy(max_attempts=1)
    listing = broken.list_files()
    assert not listing.complete
    assert outcomes(listing)["/guide/"].startswith("failed: The server kept failing (HTTP 500")


def test_retry_after_is_honoured_on_429(site: Site):
    calls = []
    site.page("/", html("Home", "<p>x</p>"))
    real = site._answer

    def answer(req: Any) -> None:
        calls.append(time.monotonic())
        if len(calls) == 2:  # robots first, then the page: throttled once
            site.log.append(type(site.log[0])("GET", req.path, {}, 429) if site.log else None)
            req.send_response(429)
            req.send_header("Retry-After", "1")
            req.send_header("Content-Length", "0")
            req.end_headers()
            return
        real(req)

    site._answer = answer  # type: ignore[method-assign]
    listing = connector(site, sitemap="off").list_files()
    assert listing.complete and outcomes(listing)["/"] == "page"
    assert calls[2] - calls[1] >= 1.0


@pytest.mark.parametrize(("scope", "seed", "expected"), [
    ("path", "/docs/", {"/docs/", "/docs/a"}),
    ("path", "/docs/intro", {"/docs/intro", "/docs/a"}),
    ("host", "/docs/", {"/docs/", "/docs/a", "/blog/b", "/docs-old/c"}),
])
def test_scope(site: Site, scope: str, seed: str, expected: set[str]):
    site.page("/docs/", html("Docs", "<p>d</p>", links=["/docs/a", "/blog/b", "/docs-old/c"]))
    site.page("/docs/intro", html("Intro", "<p>i</p>", links=["/docs/a", "/blog/b"]))
    for p in ("/docs/a", "/blog/b", "/docs-old/c"):
        site.page(p, html(p, "<p>x</p>"))
    listing = connector(site, seed_urls=[site.url(seed)], scope=scope, sitemap="off").list_files()
    got = outcomes(listing)
    assert {p for p, o in got.items() if o == "page"} == expected
    assert all(o == f"ignored: {OUT_OF_SCOPE}" for p, o in got.items() if p not in expected)


def test_domain_scope_takes_subdomains_and_not_lookalikes():
    from sluice.sync.connectors.web.urls import ScopeRule

    rule = ScopeRule("domain", ("https://example.com/docs/",))
    assert rule.allows("https://docs.example.com/x") and rule.allows("http://example.com/y")
    assert not rule.allows("https://notexample.com/") and not rule.allows("https://example.com.evil.test/")


def test_patterns_and_a_catastrophic_one_in_bounded_time(site: Site):
    site.page("/", html("Home", "<p>x</p>", links=["/keep/a", "/keep/private/b", "/other/c", "/" + "a" * 3000 + "!"]))
    for p in ("/keep/a", "/keep/private/b", "/other/c"):
        site.page(p, html(p, "<p>x</p>"))
    evil = "^http://[^/]+/(a+)+$"  # exponential in a backtracking engine on "/aaaa…!"
    started = time.monotonic()
    listing = connector(site, scope="host", sitemap="off", include=["^http://[^/]+/$", "/keep/", evil],
                        exclude=["/private/"]).list_files()
    assert time.monotonic() - started < 5
    got = outcomes(listing)
    assert got["/keep/a"] == "page" and got["/keep/private/b"].startswith("ignored: Ignored: the URL matches the "
                                                                          "source's exclude pattern 1")
    assert got["/other/c"].startswith("ignored: Ignored: the URL matches none")
    assert "/other/c" not in site.paths()


def test_redirects_to_forbidden_addresses_are_refused_and_nothing_is_fetched_there(site: Site):
    site.page("/", html("Home", "<p>x</p>", links=["/meta", "/mapped", "/loop", "/far"]))
    site.pages["/meta"] = Resource(status=302, headers={"Location": "http://169.254.169.254/latest/meta-data/"})
    site.pages["/mapped"] = Resource(status=302, headers={"Location": "http://[::ffff:10.0.0.1]/"})
    site.pages["/loop"] = Resource(status=302, headers={"Location": "/loop2"})
    site.pages["/loop2"] = Resource(status=302, headers={"Location": "/loop3"})
    for i in range(3, 9):
        site.pages[f"/loop{i}"] = Resource(status=302, headers={"Location": f"/loop{i + 1}"})
    site.pages["/far"] = Resource(status=302, headers={"Location": "/landing"})
    site.page("/landing", html("Landing", "<p>landed</p>"))
    listing = connector(site, sitemap="off").list_files()
    got = outcomes(listing)
    assert got["/meta"].startswith("failed: A redirect led to an address the deployment may not reach")
    assert got["/mapped"].startswith("failed: A redirect led to an address")
    assert got["/loop"] == "failed: More than 5 redirects; the page was not fetched."
    assert got["/landing"] == "page" and "/far" not in got  # the page is where it landed
    assert not listing.complete


def test_a_redirect_to_loopback_when_only_a_name_is_allowed_is_refused(site: Site):
    site.page("/", html("Home", "<p>x</p>", links=["/to-ip"]))
    site.pages["/to-ip"] = Resource(status=302, headers={"Location": site.url("/secret")})
    site.page("/secret", html("Secret", "<p>internal</p>"))
    named = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": "localhost", **FAST})
    cfg = WebConnector.parse_config({"seed_urls": [f"http://localhost:{site.port}/"], "rate_limit": 600000,
                                     "sitemap": "off"})
    listing = WebConnector(cfg, named, {}, resolve=lambda host: ["127.0.0.1"]).list_files()
    got = {f.source_path: f for f in listing.files}
    assert got[f"http://localhost:{site.port}/to-ip"].failure.startswith("A redirect led to an address")
    assert "/secret" not in site.paths()


def test_a_name_that_re_resolves_to_a_private_address_after_the_check_is_refused(site: Site):
    site.page("/", html("Home", "<p>x</p>"))
    answers = iter([["127.0.0.1"]] + [["10.0.0.7"]] * 20)
    cfg = WebConnector.parse_config({"seed_urls": [f"http://rebind.test:{site.port}/"], "rate_limit": 600000,
                                     "sitemap": "off"})
    listing = WebConnector(cfg, LOOPBACK, {}, resolve=lambda host: next(answers)).list_files()
    assert site.log == []
    assert not listing.complete
    assert "robots.txt" in listing.problem  # robots unreadable: the site is not crawled at all


def test_a_pdf_served_as_html_is_a_pdf_document(site: Site):
    site.page("/", html("Home", "<p>x</p>", links=["/report"]))
    site.page("/report", b"%PDF-1.4\n% a pdf\n", content_type="text/html")
    listing = connector(site, sitemap="off").list_files()
    f = next(f for f in listing.files if f.source_path.endswith("/report"))
    assert f.key.endswith("report.pdf") and f.etag.startswith("bytes:")


def test_fetch_writes_the_pages_text_as_markdown(site: Site, tmp_path):
    site.page("/", html("Home", "<h2>Part</h2><ul><li>one</li><li>two</li></ul>"))
    c = connector(site, sitemap="off")
    listing = c.list_files()
    fresh = connector(site, sitemap="off")  # another process: nothing remembered
    from sluice.sync.connectors.web import crawl

    crawl._RECENT.clear()
    crawl._held[0] = 0
    path = fresh.fetch(listing.files[0], tmp_path, 10_000)
    assert path.name == "127.0.0.1.md"
    assert path.read_text() == "# Home\n\n## Part\n\n- one\n- two\n"


def test_the_fetch_steps_share_the_sources_rate_as_the_state_machine_runs_them():
    import json
    from pathlib import Path

    from sluice.sync.connectors.web import BATCHES_AT_ONCE

    asl = json.loads((Path(__file__).resolve().parents[3] / "infra" / "statemachines" / "sync.asl.json").read_text())
    assert asl["States"]["Files"]["MaxConcurrency"] == BATCHES_AT_ONCE
    assert asl["States"]["MoreToList"]["Choices"][0] == {"Variable": "$.listing.more", "BooleanEquals": True,
                                                         "Next": "List"}


def test_a_fetch_step_keeps_its_share_of_the_crawl_delay_the_crawl_read(site: Site, tmp_path):
    from sluice.sync.connectors.web import BATCHES_AT_ONCE, crawl

    site.page("/robots.txt", "User-agent: *\nCrawl-delay: 0.05\n", content_type="text/plain")
    site.page("/", html("Home", "<p>x</p>"))
    listing = connector(site, sitemap="off").list_files()
    assert listing.state["delays"] == {"127.0.0.1": 0.05}
    fetching = connector(site, sitemap="off", state=listing.state)
    crawl._RECENT.clear()
    crawl._held[0] = 0
    fetching.fetch(next(f for f in listing.files if not f.note), tmp_path, 10_000)
    assert fetching.fetcher.delays["127.0.0.1"] == 0.05 * BATCHES_AT_ONCE
    assert "/robots.txt" not in site.paths(len(site.log) - 1)


def test_a_layout_table_is_read_once_and_a_lying_charset_is_read_in_the_real_encoding():
    from sluice.sync.connectors.web.extract import parse

    nested = (b"<html><body><table><tr><td><table><tr><td>inner words</td></tr></table></td>"
              b"<td><p>side words</p></td></tr></table></body></html>")
    text = parse(nested, "http://h/").text
    assert text.count("inner words") == 1 and text.count("side words") == 1  # not once per enclosing cell
    arabic = "مرحبا بكم في الميناء".encode("cp1256")
    lying = b'<html><head><meta charset="UTF-8"><title>t</title></head><body><p>' + arabic + b"</p></body></html>"
    assert "مرحبا بكم في الميناء" in parse(lying, "http://h/").text


class MemoryJournal:
    def __init__(self) -> None:
        self.kept: list[dict] = []

    def entries(self) -> list[dict]:
        return [dict(e) for e in self.kept]

    def append(self, entries: list[dict]) -> None:
        import json

        self.kept.extend(json.loads(json.dumps(entries)))  # as the database keeps them


def test_a_crawl_in_steps_lists_what_one_crawl_lists_and_names_links_by_number(site: Site):
    small_site(site)
    site.page("/robots.txt", "User-agent: *\nDisallow: /about\n", content_type="text/plain")
    whole = connector(site, scope="host", sitemap="off").list_files()
    before = len(site.log)
    journal = MemoryJournal()
    settings = LOOPBACK.model_copy(update={"web_step_seconds": 0})
    steps, listing = 0, None
    while listing is None:
        steps += 1
        listing = connector(site, scope="host", sitemap="off", settings=settings).list_step(None, journal)
    assert steps == 3  # /, /guide/, /guide/install: one page a step
    assert [(f.source_path, f.etag, f.note) for f in listing.files] == \
        [(f.source_path, f.etag, f.note) for f in whole.files]
    assert listing.state == whole.state
    pages = [e["p"] for e in journal.kept if "p" in e]
    assert all(isinstance(i, int) for p in pages for row in p.values() for i in row[6])
    assert sorted(p for p in site.paths(before) if p != "/robots.txt") == ["/", "/guide/", "/guide/install"]
