"""A web source through the local stack, against a site on loopback (tests/web_site.py): created and
previewed through the API, run by the state machine, its pages ingested by the ordinary pipeline with
the local model (counted) and searched; the per-page report says what happened to each page and why;
a second run makes only conditional requests, fetches nothing and embeds nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sluice.sync.connectors.web.crawl import ROBOTS, UNCHANGED_304
from tests.e2e.test_sync_remote_stores import World, counts, world  # noqa: F401 - the module's fixture
from tests.web_site import Site, html

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    s.page("/robots.txt", "User-agent: *\nDisallow: /internal/\n", content_type="text/plain")
    s.page("/", html("Harbour handbook", "<p>Welcome to the harbour handbook.</p>",
                     links=["/mooring", "/tides", "/internal/pay"]))
    s.page("/mooring", html("Mooring", "<h2>Lines</h2><p>Every berth uses a quillwort hitch on the bow line.</p>"))
    s.page("/tides", html("Tides", "<table><tr><th>Hour</th><th>Metres</th></tr><tr><td>6</td><td>4.2</td></tr>"
                                   "</table>"))
    s.page("/internal/pay", html("Pay", "<p>Never crawled.</p>"))
    yield s
    s.close()


def test_a_web_source_crawls_once_and_a_second_run_fetches_and_embeds_nothing(world: World, site: Site):  # noqa: F811
    w = world
    listed = {c["connector"]: c for c in w.api.get("/rag/sync/connectors").json()["connectors"]}
    assert listed["web"]["secret_kind"] is None
    assert {"seed_urls", "scope", "include", "exclude", "sitemap", "max_pages", "max_depth", "rate_limit",
            "follow_documents"} == set(listed["web"]["config_schema"]["properties"])
    kb = w.base("harbour web")
    refused = w.api.post(f"/kb/{kb['id']}/sync-sources", json={
        "name": "metadata", "connector": "web", "secret_id": None,
        "config": {"seed_urls": [site.url("/"), "http://169.254.169.254/latest/"]}})
    assert refused.status_code == 422, refused.text
    assert "config.seed_urls[1]" in refused.json()["error"]["details"]["fields"]
    config = {"seed_urls": [site.url("/")], "scope": "host", "sitemap": "off", "rate_limit": 600}
    preview = w.api.post(f"/kb/{kb['id']}/sync-sources/preview", json={
        "name": "harbour", "connector": "web", "config": config, "secret_id": None})
    assert preview.status_code == 200, preview.text
    assert preview.json()["sentence"].startswith("This source needs no credential")
    source = w.source(kb, "web", config, None)

    embedded_before = w.embed_calls()
    first = w.run(source)
    assert w.embed_calls() > embedded_before  # the pipeline embedded the three pages
    assert first["status"] == "succeeded", first
    assert counts(first) == (4, 3, 0, 0, 0, 0), first
    report = w.outcomes(first)
    assert report[site.url("/internal/pay")] == ("ignored", ROBOTS)
    assert {report[site.url(p)][0] for p in ("/", "/mooring", "/tides")} == {"new"}
    assert "/internal/pay" not in site.paths()
    assert first["requests_made"] == len(site.log) and first["bytes_downloaded"] > 0
    hits = w.search(kb, "Which hitch does every berth use?")
    assert any("quillwort" in h["content"] for h in hits)

    before, fetched, embedded = len(site.log), w.fetched.get("web", 0), w.embed_calls()
    second = w.run(source)
    assert second["status"] == "succeeded" and counts(second) == (4, 0, 0, 3, 0, 0), second
    assert {r for o, r in w.outcomes(second).values() if o == "unchanged"} == {UNCHANGED_304}
    pages = [h for h in site.log[before:] if h.path != "/robots.txt"]
    assert {h.status for h in pages} == {304}
    assert (w.fetched.get("web", 0), w.embed_calls(), len(w.documents(kb))) == (fetched, embedded, 3)
    assert second["bytes_downloaded"] < first["bytes_downloaded"]


def test_sluice_sync_run_follows_a_web_source_and_prints_every_page(world: World, site: Site, capsys):  # noqa: F811
    from sluice.cli import main

    w = world
    kb = w.base("harbour cli")
    source = w.source(kb, "web", {"seed_urls": [site.url("/")], "scope": "host", "sitemap": "off", "rate_limit": 600},
                      None)
    token = w.api.headers["Authorization"].removeprefix("Bearer ")
    code = main(["sync", "run", source["id"], "--api", w.runtime.api_url, "--token", token, "--poll", "0.2"])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert any(line.startswith("new") and site.url("/mooring") in line for line in lines)
    assert any(line.startswith("ignored") and site.url("/internal/pay") in line and "robots.txt" in line
               for line in lines)
    assert "succeeded: listed 4, new 3, updated 0, unchanged 0, ignored 1, failed 0, removed 0" in lines[-2]
    assert lines[-1] == f"requests {len(site.log)}, bytes downloaded " + lines[-1].rsplit(" ", 1)[1]
