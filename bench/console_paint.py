"""The console's first meaningful paint (R-UI-2): the documents screen of a base of 100,000 documents
against one of 10, through the local stack in Debian's Chromium; and the bundle's size, gzipped.

    .venv/bin/python bench/console_paint.py                 # 100,000 documents (about a minute)
    .venv/bin/python bench/console_paint.py --documents 20000

The documents are rows written straight into the base (the pipeline is not what is measured), a mix
of indexed, failed and in-progress ones. "First meaningful paint" is the time from the navigation to
the screen (the page already signed in, as a user who opens a base from the list) until the first
page of documents and the status counts are on it; each is the median of --runs navigations. Bytes
are what went over the wire (headers and bodies, Playwright's request sizes) for that navigation,
and every API call it made is listed: none reads the whole base.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from harness import ROOT, print_table

STATIC = ROOT / "functions" / "console" / "static"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def bundle_gzip() -> tuple[int, int]:
    files = sorted((STATIC / "assets").iterdir())
    raw = b"".join(f.read_bytes() for f in files)
    return len(raw), len(gzip.compress(raw, 9))


def fill(kb: dict[str, Any], n: int) -> None:
    """``n`` document rows in the base: 90% indexed, 8% failed with a sentence, 2% embedding."""
    from sluice.db.connection import transaction

    with transaction() as conn:
        conn.execute(
            """
            INSERT INTO documents (id, kb_id, org_id, collection_name, filename, filesize, filetype, status, stage,
                                   error_message, chunk_count, progress_done, progress_total, uploaded_by,
                                   created_at, completed_at)
            SELECT gen_random_uuid(), %(kb)s, %(org)s, %(collection)s, 'report-' || i || '.pdf', 20000 + i, 'pdf',
                   CASE WHEN i %% 50 = 0 THEN 'processing' WHEN i %% 12 = 0 THEN 'error' ELSE 'done' END,
                   CASE WHEN i %% 50 = 0 THEN 'embedding' WHEN i %% 12 = 0 THEN 'parsing' ELSE 'done' END,
                   CASE WHEN i %% 12 = 0 AND i %% 50 <> 0 THEN 'This PDF could not be read: it is damaged.' END,
                   CASE WHEN i %% 12 = 0 OR i %% 50 = 0 THEN 0 ELSE 7 END,
                   CASE WHEN i %% 50 = 0 THEN 2 END, CASE WHEN i %% 50 = 0 THEN 5 END,
                   'bench', now() - (i || ' seconds')::interval, now()
              FROM generate_series(1, %(n)s) AS i
            """,
            {"kb": kb["id"], "org": kb["org_id"], "collection": kb["collection_name"], "n": n},
        )
        conn.execute("ANALYZE documents")


def paint(browser: Any, api_url: str, token: str, kb_id: str, runs: int) -> dict[str, Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{api_url}/console#token={token}")
    page.get_by_role("heading", name="Knowledge bases").wait_for()
    times: list[float] = []
    calls: list[str] = []
    sizes: list[int] = []
    for run in range(runs + 1):  # the first warms the server's and the browser's caches; not counted
        page.goto(f"{api_url}/console#/")
        page.locator("table.list").wait_for()  # the list's own call answered: not counted below
        seen: list[Any] = []
        def listener(request: Any, seen: list[Any] = seen) -> None:
            seen.append(request)

        page.on("requestfinished", listener)
        start = time.perf_counter()
        page.goto(f"{api_url}/console#/kb/{kb_id}")
        page.locator("tr.doc").first.wait_for(timeout=60_000)
        page.locator(".filters .count").first.wait_for(timeout=60_000)
        elapsed = time.perf_counter() - start
        page.remove_listener("requestfinished", listener)
        if run == 0:
            continue
        times.append(elapsed)
        total = 0
        for request in seen:
            s = request.sizes()
            total += s["requestHeadersSize"] + s["requestBodySize"] + s["responseHeadersSize"] + s["responseBodySize"]
        sizes.append(total)
        calls = [f"{r.method} {path}" for r in seen if not (path := r.url.removeprefix(api_url)).startswith("/console")]
    # A cold load as well: the page itself, its assets, the sign-in, then the screen.
    cold = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    cold_seen: list[Any] = []
    cold.on("requestfinished", lambda r: cold_seen.append(r))
    start = time.perf_counter()
    cold.goto(f"{api_url}/console#token={token}")
    cold.get_by_role("heading", name="Knowledge bases").wait_for()
    cold.evaluate("(id) => { location.hash = '#/kb/' + id }", kb_id)
    cold.locator("tr.doc").first.wait_for(timeout=60_000)
    cold.locator(".filters .count").first.wait_for(timeout=60_000)
    cold_time = time.perf_counter() - start
    cold_bytes = sum(sum(r.sizes()[k] for k in ("requestHeadersSize", "requestBodySize", "responseHeadersSize",
                                               "responseBodySize")) for r in cold_seen)
    context.close()
    return {"ms": statistics.median(times) * 1000, "bytes": int(statistics.median(sizes)), "calls": calls,
            "cold_ms": cold_time * 1000, "cold_bytes": cold_bytes, "cold_calls": len(cold_seen)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not (STATIC / "index.html").is_file():
        raise SystemExit("the console is not built: make install (npm ci and the Vite build)")

    import httpx
    from playwright.sync_api import sync_playwright

    from sluice.local.runtime import LocalRuntime
    from sluice.local.tokens import mint

    raw, packed = bundle_gzip()
    with tempfile.TemporaryDirectory(prefix="sluice-console-bench-") as tmp:
        rt = LocalRuntime(data_dir=Path(tmp), api_port=0, pumps=False).start()
        try:
            token = mint(rt.jwt_secret, user="bench", org="bench-org",
                         permissions=["collections:view", "collections:edit"])
            api = httpx.Client(base_url=rt.api_url, timeout=120, headers={"Authorization": f"Bearer {token}"})
            big = api.post("/kb", json={"name": f"Big {uuid.uuid4().hex[:4]}", "scope": "org"}).json()
            small = api.post("/kb", json={"name": f"Small {uuid.uuid4().hex[:4]}", "scope": "org"}).json()
            started = time.perf_counter()
            fill(big, args.documents)
            fill(small, args.small)
            print(f"wrote {args.documents:,} + {args.small} document rows in {time.perf_counter() - started:.1f} s")
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
                try:
                    big_paint = paint(browser, rt.api_url, token, big["id"], args.runs)
                    small_paint = paint(browser, rt.api_url, token, small["id"], args.runs)
                finally:
                    browser.close()
        finally:
            rt.stop()

    n, m = f"{args.documents:,} documents", f"{args.small} documents"
    rows: list[list[object]] = [
        ["first meaningful paint, signed in (ms, median)", big_paint["ms"], small_paint["ms"],
         big_paint["ms"] / small_paint["ms"]],
        ["bytes over the wire for it", big_paint["bytes"], small_paint["bytes"],
         big_paint["bytes"] / small_paint["bytes"]],
        ["API calls it made", len(big_paint["calls"]), len(small_paint["calls"]),
         len(big_paint["calls"]) / max(1, len(small_paint["calls"]))],
        ["cold load to the same screen (ms)", big_paint["cold_ms"], small_paint["cold_ms"],
         big_paint["cold_ms"] / small_paint["cold_ms"]],
        ["cold load bytes (page, assets, API)", big_paint["cold_bytes"], small_paint["cold_bytes"],
         big_paint["cold_bytes"] / small_paint["cold_bytes"]],
    ]
    print_table(f"The documents screen: a base of {n} against one of {m} (local stack, Chromium)",
                ["figure", n, m, "ratio"], rows)
    for label, result in ((n, big_paint), (m, small_paint)):
        print(f"\nAPI calls of the documents screen ({label}, the last measured navigation):")
        for call in result["calls"]:
            print(f"  {call}")
    print_table("The bundle (functions/console/static/assets)", ["figure", "Sluice console", "budget", "ratio"],
                [["JS + CSS, gzip -9 (bytes)", packed, 250 * 1024, packed / (250 * 1024)],
                 ["JS + CSS, raw (bytes)", raw, "", ""]], number_format="{:,.2f}")


if __name__ == "__main__":
    main()
