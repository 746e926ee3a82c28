"""A web source's runs through the real steps (list, batch, await, reconcile, finish) against the
embedded PostgreSQL, a moto bucket and a site on loopback: what a second run costs (only
conditional requests, 304s, nothing handed to the pipeline), a page whose markup alone changed is not
embedded again, a changed page replaces its document, a page gone is removed only after a whole crawl,
and the report's outcome and reason for each page."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from sluice.config import get_settings
from sluice.db import documents as doc_repo
from sluice.db import sync_runs as runs
from sluice.db import sync_sources as sources
from sluice.db.connection import transaction
from sluice.sync import tasks
from sluice.sync.connectors import ConnectorOpener
from sluice.sync.connectors.web.crawl import UNCHANGED_304, UNCHANGED_TEXT
from sluice.sync.context import SyncContext
from tests.integration.moto_bucket import Bucket
from tests.integration.sync.test_sync_tasks import finish_indexing, make_bench
from tests.web_site import Site, html


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    yield s
    s.close()


class WebBench:
    def __init__(self, bucket: Bucket, site: Site, **config: Any) -> None:
        base = make_bench(bucket)
        settings = get_settings().model_copy(update={
            "sync_await_seconds": 0, "sync_allowed_hosts": "127.0.0.0/8", "web_max_rate_per_minute": 600000})
        self.ctx = SyncContext(uow=transaction, store=bucket.store, settings=settings,
                               connectors=ConnectorOpener(settings, None))
        self.kb = base.kb
        cfg = {"seed_urls": [site.url("/")], "scope": "host", "sitemap": "off", "rate_limit": 600000, **config}
        with transaction() as conn:
            self.source = sources.insert(conn, dataclasses.replace(base.source, **{
                "id": uuid.uuid4(), "name": "site", "connector": "web", "config": cfg}))
        self.site = site

    def run(self, *, index: bool = True) -> uuid.UUID:
        with transaction() as conn:
            run = runs.insert(conn, source_id=self.source.id, kb_id=self.kb.id, collection_name=self.kb.collection_name,
                              connector="web", sync_mode="new_only", trigger="manual", started_by="t")
        listed = tasks.run_task(self.ctx, {"task": "list", "run_id": str(run.id)})
        for item in listed["batches"]:
            tasks.run_task(self.ctx, {"task": "batch", **item})
        if index:
            for _, (outcome, doc_id, _) in self.report(run.id).items():
                if outcome in ("new", "updated") and doc_id is not None:
                    finish_indexing(doc_id)
        tasks.run_task(self.ctx, {"task": "await", "run_id": str(run.id)})
        tasks.run_task(self.ctx, {"task": "reconcile", "run_id": str(run.id)})
        tasks.run_task(self.ctx, {"task": "finish", "run_id": str(run.id)})
        return run.id

    def report(self, run_id: uuid.UUID) -> dict[str, tuple[str | None, uuid.UUID | None, str | None]]:
        with transaction() as conn:
            files, _ = runs.files_page(conn, run_id, limit=500, offset=0)
        return {f.source_path.removeprefix(self.site.base): (f.outcome, f.document_id, f.reason) for f in files}

    def documents(self) -> dict[str, Any]:
        with transaction() as conn:
            rows = conn.execute("SELECT id, source_path, status, content_hash FROM documents WHERE kb_id = %s",
                                (self.kb.id,)).fetchall()
        return {r["source_path"].removeprefix(self.site.base): r for r in rows}

    def stored_text(self, path: str) -> str:
        with transaction() as conn:
            doc = doc_repo.get(conn, self.documents()[path]["id"])
        assert doc is not None
        return self.ctx.store.get(doc.storage_path).decode()


def pages(site: Site) -> None:
    site.page("/", html("Home", "<p>Welcome to the harbour handbook.</p>", links=["/moor", "/tides", "/gone"]))
    site.page("/moor", html("Mooring", "<h2>Lines</h2><ul><li>bow line</li><li>stern line</li></ul>"))
    site.page("/tides", html("Tides", "<table><tr><th>Hour</th><th>Metres</th></tr><tr><td>6</td><td>4.2</td></tr>"
                                      "</table>"))
    site.page("/gone", html("Gone soon", "<p>This page will go away.</p>"))


def test_a_first_run_ingests_each_page_as_markdown_and_a_second_run_pays_for_nothing(bucket, db_url, site: Site):
    pages(site)
    bench = WebBench(bucket, site)
    first = bench.report(bench.run())
    assert {p: o for p, (o, _, _) in first.items()} == {"/": "new", "/moor": "new", "/tides": "new", "/gone": "new"}
    assert bench.stored_text("/moor") == "# Mooring\n\n## Lines\n\n- bow line\n- stern line\n"
    assert "| Hour | Metres |" in bench.stored_text("/tides")
    # every page was read once: the fetch step took the crawl's text, not a second request
    assert sorted(site.paths()) == sorted(["/robots.txt", "/", "/moor", "/tides", "/gone"])
    docs_before = bench.documents()

    before = len(site.log)
    second = bench.report(bench.run())
    assert {o for o, _, _ in second.values()} == {"unchanged"}
    assert {r for _, _, r in second.values()} == {UNCHANGED_304}
    hits = [h for h in site.log[before:] if h.path != "/robots.txt"]
    assert {h.status for h in hits} == {304} and all("If-None-Match" in h.headers for h in hits)
    assert bench.documents() == docs_before  # nothing handed to the pipeline: nothing parsed or embedded


def test_markup_only_changes_are_not_embedded_and_a_changed_page_replaces_its_document(bucket, db_url, site: Site):
    site.validators = False  # every run downloads: the text decides
    pages(site)
    bench = WebBench(bucket, site)
    bench.run()
    docs_before = bench.documents()
    site.page("/", html("Home", '<p>Welcome to the harbour handbook.</p><input type=hidden name=csrf value="9">',
                        links=["/moor", "/tides", "/gone"], extra_head="<script>var now=123</script>"))
    site.page("/tides", html("Tides", "<p>Tables moved to the harbour office.</p>"))
    run_id = bench.run(index=False)
    report = bench.report(run_id)
    assert report["/"][0] == "unchanged" and report["/"][2] == UNCHANGED_TEXT
    assert report["/tides"][0] == "updated"
    docs = bench.documents()
    assert docs["/"]["id"] == docs_before["/"]["id"]
    # insert before delete: until the new version is indexed, the old one is still the document there
    with transaction() as conn:
        at = conn.execute("SELECT id, status FROM documents WHERE kb_id = %s AND source_path = %s ORDER BY created_at",
                          (bench.kb.id, site.url("/tides"))).fetchall()
    assert [r["id"] for r in at][0] == docs_before["/tides"]["id"] and len(at) == 2


def test_a_page_gone_is_removed_after_a_whole_crawl_and_kept_after_a_cut_one(bucket, db_url, site: Site):
    pages(site)
    bench = WebBench(bucket, site)
    bench.run()
    del site.pages["/gone"]
    site.page("/", "", status=503)  # the home page fails: the crawl is not whole
    bench_cut = bench.report(bench.run())
    assert bench_cut["/"][0] == "failed"
    assert "/gone" in bench.documents()
    site.pages.pop("/")
    pages(site)
    del site.pages["/gone"]
    report = bench.report(bench.run())
    assert report["/gone"][0] == "removed"
    assert "/gone" not in bench.documents()


def test_max_pages_cuts_and_then_nothing_is_removed(bucket, db_url, site: Site):
    pages(site)
    bench = WebBench(bucket, site)
    bench.run()
    with transaction() as conn:
        conn.execute("UPDATE sync_sources SET config = config || '{\"max_pages\": 2}' WHERE id = %s",
                     (bench.source.id,))
    run_id = bench.run()
    with transaction() as conn:
        run = runs.get(conn, run_id)
    assert run is not None and not run.listing_complete and "max_pages" in (run.error or "")
    assert set(bench.documents()) == {"/", "/moor", "/tides", "/gone"}


def _list_until_done(bench: WebBench, run_id: uuid.UUID) -> tuple[dict[str, Any], int]:
    steps = 0
    while True:
        steps += 1
        answer = tasks.run_task(bench.ctx, {"task": "list", "run_id": str(run_id)})
        if not answer["more"]:
            return answer, steps


def _new_run(bench: WebBench) -> uuid.UUID:
    with transaction() as conn:
        return runs.insert(conn, source_id=bench.source.id, kb_id=bench.kb.id, collection_name=bench.kb.collection_name,
                           connector="web", sync_mode="new_only", trigger="manual", started_by="t").id


def test_a_crawl_longer_than_a_step_goes_on_from_its_journal_in_the_next(bucket, db_url, site: Site):
    pages(site)
    bench = WebBench(bucket, site)
    bench.ctx.settings = bench.ctx.settings.model_copy(update={"web_step_seconds": 0})  # one page a step
    bench.ctx.connectors = ConnectorOpener(bench.ctx.settings, None)
    run_id = _new_run(bench)
    answer, steps = _list_until_done(bench, run_id)
    assert steps == 4 and answer["batches"]  # four pages, one a step
    with transaction() as conn:
        assert conn.execute("SELECT count(*) AS n FROM sync_list_journal WHERE run_id = %s",
                            (run_id,)).fetchone()["n"] == 0
    page_hits = [p for p in site.paths() if p != "/robots.txt"]
    assert sorted(page_hits) == ["/", "/gone", "/moor", "/tides"]  # each page once, across four steps
    with transaction() as conn:
        run = runs.get(conn, run_id)
    assert run is not None and run.requests_made == len(site.log) and run.bytes_downloaded


def test_a_list_step_killed_mid_way_resumes_and_fetches_no_page_twice(bucket, db_url, site: Site, monkeypatch):
    from sluice.sync.connectors.web.fetcher import Fetcher

    pages(site)
    bench = WebBench(bucket, site)
    real = Fetcher.get
    calls = {"n": 0}

    class Killed(BaseException):
        """What a function's timeout is to the code it stops: nothing of it runs on."""

    def dying(self: Fetcher, url: str, *args: Any, **kwargs: Any) -> Any:
        if not url.endswith("/robots.txt"):
            calls["n"] += 1
            if calls["n"] == 3:
                raise Killed
        return real(self, url, *args, **kwargs)

    monkeypatch.setattr(Fetcher, "get", dying)
    run_id = _new_run(bench)
    with pytest.raises(Killed):
        tasks.run_task(bench.ctx, {"task": "list", "run_id": str(run_id)})
    assert len([p for p in site.paths() if p != "/robots.txt"]) == 2
    monkeypatch.setattr(Fetcher, "get", real)
    answer, _ = _list_until_done(bench, run_id)  # the state machine's Retry of the list step
    assert answer["complete"]
    assert sorted(p for p in site.paths() if p != "/robots.txt") == ["/", "/gone", "/moor", "/tides"]
    for item in answer["batches"]:
        tasks.run_task(bench.ctx, {"task": "batch", **item})
    assert {o for o, _, _ in bench.report(run_id).values()} == {"new"}
