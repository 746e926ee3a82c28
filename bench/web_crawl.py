"""The web connector (R-SYNC-6, issue 38): what a first crawl costs, and that a second one costs nothing.

    .venv/bin/python bench/web_crawl.py                # 500 pages + 5 PDFs; ~20 minutes on 2 shared cores
    .venv/bin/python bench/web_crawl.py --pages 100

A generated site on loopback (tests/web_site.py: it logs every request): pages with navigation, a
header, a footer, a cookie banner and a form around their main text, linked to each other, a sitemap
(half the pages dated with ``<lastmod>``) and a few PDFs. Runs go through the local runtime (the state
machine of template.yaml, the ordinary pipeline: parse, chunk, embed with the bundled local model)
with the rate limit lifted. Counted: the server's log (bodies sent: 200s; 304s), the documents handed
to the pipeline (each is one parse) and the embedder's calls.

* first crawl: pages a minute, end to end (crawl, parse, chunk, embed; the run ends when all is indexed);
* unchanged re-crawl with ETag/Last-Modified: bodies, parses and embedding calls (target 0 / 0 / 0);
* unchanged re-crawl of a server with no validators and a timestamp in every page: embedding calls
  (target 0: the text is the same, only the markup changed);
* one page changed, one removed, one added: exactly 1 updated, 1 removed, 1 new;
* extraction: precision and recall of main-text words on generated pages whose main text is known, the
  web connector's extractor against the plain HTML reader that reads an uploaded .html file; and on the
  HTML files of ../shared/corpus/real/html (no known main text there: the share of the plain reader's
  words each keeps, and the words it drops).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harness import print_table as table

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "real" / "html"
WORD = re.compile(r"\w+")
CHROME = ("Site header Products Pricing Careers Contact", "Home Guides Reference Blog Support Status",
          "We use cookies to improve your experience Accept all Reject",
          "Subscribe to our newsletter Email address Sign up", "Copyright 2026 Example Harbour Ltd Privacy Terms")
ADJ = ("amber", "brisk", "coral", "dusky", "ember", "frosty", "gilded", "hazel", "ivory", "jade", "khaki", "lunar")
NOUN = ("anchor", "buoy", "capstan", "dinghy", "ensign", "fender", "galley", "hawser", "jetty", "keel", "lantern")


def main_text(i: int, version: int = 1) -> tuple[str, str]:
    """A page's title and its main text (known words: the extraction's ground truth)."""
    a, n = ADJ[i % len(ADJ)], NOUN[(i * 7) % len(NOUN)]
    title = f"Procedure {i} the {a} {n}"
    body = (f"Procedure {i} covers the {a} {n} at berth {i * 13 % 97}. Revision {version}. "
            f"The harbour master approves request {i} within {i % 5 + 1} days and files it under ledger {i * 31}. "
            f"Steps: inspect the {n}, record reading {i * 3}, notify crew {i % 9}.")
    return title, body


def page(i: int, pages: int, version: int = 1, stamp: str = "") -> str:
    title, body = main_text(i, version)
    links = sorted({0, (i + 1) % pages, (i * 7 + 3) % pages, (i // 2)} - {i})
    nav = " ".join(f'<a href="/p/{j}">Page {j}</a>' for j in links)
    pdf = f'<p><a href="/files/report-{i // 100 % 5}.pdf">Report</a></p>' if i % 100 == 0 else ""
    return (f"<!doctype html><html><head><title>{title}</title><meta name=generated content='{stamp}'>"
            f"<script>window.t='{stamp}'</script></head><body>"
            f"<header>{CHROME[0]}</header><nav>{CHROME[1]} {nav}</nav>"
            f"<div id=cookie-banner>{CHROME[2]}</div>"
            f"<main><h1>{title}</h1><p>{body}</p><ul><li>item {i} alpha</li><li>item {i} beta</li></ul>"
            f"<table><tr><th>Berth</th><th>Depth</th></tr><tr><td>{i % 97}</td><td>{i % 11}.5</td></tr></table>"
            f"{pdf}</main>"
            f"<aside>Related: {CHROME[1]}</aside><form>{CHROME[3]}<input name=csrf value='{stamp}'></form>"
            f"<footer>{CHROME[4]} Rendered {stamp}</footer></body></html>")


@functools.cache
def pdf_bytes(i: int) -> bytes:
    """A PDF, made once: a server serves the same bytes again (pymupdf stamps each new file's date)."""
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), f"Annual report {i}: the harbour moved {i * 1000} tonnes.")
    data: bytes = doc.tobytes()
    return data


def build(site: Any, pages: int, *, stamp: str = "", lastmod: bool = True) -> None:
    from tests.web_site import Resource, sitemap

    for i in range(pages):
        site.page(f"/p/{i}", page(i, pages, stamp=stamp))
    for i in range(5):
        site.pages[f"/files/report-{i}.pdf"] = Resource(pdf_bytes(i), content_type="application/pdf")
    site.page("/robots.txt", f"User-agent: *\nDisallow: /private/\nSitemap: {site.url('/sitemap.xml')}\n",
              content_type="text/plain")
    site.page("/sitemap.xml", sitemap([(site.url(f"/p/{i}"), "2026-11-01" if lastmod and i % 2 == 0 else None)
                                       for i in range(pages)]), content_type="application/xml")


def words(text: str) -> Counter[str]:
    return Counter(WORD.findall(text.lower()))


def pr(got: Counter[str], truth: Counter[str]) -> tuple[float, float]:
    """Precision and recall of distinct words (a title said twice is not a word more)."""
    hit = len(set(got) & set(truth))
    return hit / max(1, len(got)), hit / max(1, len(truth))


def plain(html: bytes) -> str:
    from types import SimpleNamespace

    from sluice.parsing.text import read_html

    return read_html(html, SimpleNamespace(max_chars=10_000_000)).text  # type: ignore[arg-type]


def trafilatura_text(html: bytes) -> str | None:
    """trafilatura 2 (Apache-2.0) as a comparison, when --trafilatura-path holds it (never a dependency)."""
    try:
        import trafilatura
    except ImportError:
        return None
    out = trafilatura.extract(html, output_format="markdown", include_tables=True, favor_recall=True)
    return str(out or "")


def extraction_rows(pages: int) -> list[list[object]]:
    from sluice.sync.connectors.web.extract import parse

    rows: list[list[object]] = []
    ours_p, ours_r, plain_p, plain_r, tr_p, tr_r = [], [], [], [], [], []
    for i in range(min(pages, 200)):
        html = page(i, pages, stamp="2026-12-04T05:00:00Z").encode()
        title, body = main_text(i)
        report = "Report" if i % 100 == 0 else ""
        truth = words(f"{title} {body} item {i} alpha item {i} beta Berth Depth {i % 97} {i % 11}.5 {report}")
        tr = trafilatura_text(html)
        for (p, r), ps, rs in ((pr(words(parse(html, "http://h/").text), truth), ours_p, ours_r),
                               (pr(words(plain(html)), truth), plain_p, plain_r),
                               *([(pr(words(tr), truth), tr_p, tr_r)] if tr is not None else [])):
            ps.append(p)
            rs.append(r)
    n = len(ours_p)
    other = f"; trafilatura {sum(tr_p) / n:.3f} / {sum(tr_r) / n:.3f}" if tr_p else ""
    rows += [[f"extraction on {n} generated pages: precision / recall of main-text words",
              f"{sum(ours_p) / n:.3f} / {sum(ours_r) / n:.3f}",
              f"plain HTML reader {sum(plain_p) / n:.3f} / {sum(plain_r) / n:.3f}{other}", "-"]]
    if not CORPUS.is_dir():
        rows.append(["extraction on ../shared/corpus/real/html", "skipped: the corpus is absent", "-", "-"])
        return rows
    kept_ours = kept_plain = total_plain = kept_tr = 0
    for path in sorted(CORPUS.glob("*.htm*")):
        data = path.read_bytes()
        try:
            reference = words(plain(data))
        except Exception:  # noqa: BLE001 - a file the plain reader refuses is left out of the comparison
            continue
        ours = words(parse(data, "http://h/").text)
        total_plain += sum(reference.values())
        kept_ours += sum((ours & reference).values())
        kept_plain += sum(ours.values())
        tr = trafilatura_text(data)
        kept_tr += sum((words(tr) & reference).values()) if tr is not None else 0
    compared = trafilatura_text(b"<p>x</p>") is not None
    other = f"; trafilatura keeps {kept_tr / max(1, total_plain):.3f}" if compared else ""
    rows.append([f"real HTML ({len(list(CORPUS.glob('*.htm*')))} files, no known main text): share of the plain "
                 "reader's words the extractor keeps", f"{kept_ours / max(1, total_plain):.3f}",
                 f"{total_plain:,} words read by the plain reader, {kept_plain:,} by the extractor{other}",
                 "lower = boilerplate dropped (or text lost)"])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--trafilatura-path", help="a folder holding trafilatura (pip install --target DIR "
                                                   "trafilatura), compared in the extraction rows")
    parser.add_argument("--plain-pages", type=int, default=100,
                        help="pages of the site without validators (its first crawl is only the set-up)")
    args = parser.parse_args()
    if args.trafilatura_path:
        sys.path.append(args.trafilatura_path)
    logging.disable(logging.WARNING)
    os.environ["SYNC_ALLOWED_HOSTS"] = "127.0.0.0/8"
    os.environ["WEB_MAX_RATE_PER_MINUTE"] = "1000000"
    os.environ["WEB_MAX_PAGES_PER_RUN"] = "100000"

    import httpx

    from sluice import wiring
    from sluice.config import get_settings, reset_settings
    from sluice.local.runtime import LocalRuntime
    from sluice.local.tokens import mint
    from sluice.sync import tasks
    from tests.web_site import Site, sitemap

    rows: list[list[object]] = extraction_rows(args.pages)
    handed = [0]
    lock = threading.Lock()
    original_hand_off = tasks.hand_off

    def counted_hand_off(*a: Any, **kw: Any) -> Any:
        with lock:
            handed[0] += 1
        return original_hand_off(*a, **kw)

    tasks.hand_off = counted_hand_off  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(prefix="sluice-bench-web-") as tmp:
        rt = LocalRuntime(data_dir=Path(tmp) / "rt", api_port=0).start()
        sites: list[Site] = []
        try:
            os.environ["SYNC_ALLOWED_HOSTS"] = "127.0.0.0/8"  # the runtime applied the template's
            reset_settings()
            wiring.sync_context.cache_clear()
            # the bundled model's embedder, counted at its class (the stage builds its embedders per event)
            from sluice.embedding.local import LocalEmbedder

            embeds = [0]
            original_embed = LocalEmbedder.embed_documents

            def counted_embed(self: Any, texts: Any) -> list[list[float]]:
                with lock:
                    embeds[0] += 1
                return original_embed(self, texts)

            LocalEmbedder.embed_documents = counted_embed  # type: ignore[method-assign]
            token = mint(get_settings().dev_jwt_secret, user="bench", org="bench",
                         permissions=["collections:edit", "secrets:view"], app_admin=False)
            api = httpx.Client(base_url=rt.api_url, timeout=300, headers={"Authorization": f"Bearer {token}"})

            def source(site: Site, name: str) -> dict[str, Any]:
                kb = api.post("/kb", json={"name": name, "scope": "org"}).json()
                resp = api.post(f"/kb/{kb['id']}/sync-sources", json={
                    "name": name, "connector": "web", "secret_id": None,
                    "config": {"seed_urls": [site.url("/p/0")], "scope": "host", "rate_limit": 1000000,
                               "max_pages": args.pages + 100}})
                assert resp.status_code == 201, resp.text
                return dict(resp.json())

            def run(src: dict[str, Any], site: Site) -> dict[str, Any]:
                at, h0, e0 = len(site.log), handed[0], embeds[0]
                started = time.perf_counter()
                run_id = api.post(f"/kb/{src['kb_id']}/sync-sources/{src['id']}/run").json()["id"]
                while True:
                    state = api.get(f"/rag/sync/logs/{run_id}").json()
                    if state["status"] not in ("queued", "running"):
                        break
                    time.sleep(0.25)
                hits = site.log[at:]
                return {"state": state, "seconds": time.perf_counter() - started,
                        "bodies": sum(1 for h in hits if h.status == 200 and h.path.startswith(("/p/", "/files/"))),
                        "304": sum(1 for h in hits if h.status == 304), "requests": len(hits),
                        "parses": handed[0] - h0, "embeds": embeds[0] - e0}

            def describe(r: dict[str, Any]) -> str:
                c = r["state"]["counts"]
                return (f"{r['state']['status']}: new {c['new']}, updated {c['updated']}, unchanged {c['unchanged']},"
                        f" ignored {c['ignored']}, failed {c['failed']}, removed {c['removed']}")

            site = Site()
            sites.append(site)
            build(site, args.pages)
            src = source(site, "bench web")
            first = run(src, site)
            docs = first["state"]["counts"]["new"]
            rows += [
                [f"first crawl, {args.pages} pages + {min(5, (args.pages + 99) // 100)} PDFs, end to end (crawl, "
                 "parse, chunk, embed): pages/minute",
                 round(docs / first["seconds"] * 60), f"{first['seconds']:.1f} s; {describe(first)}",
                 f"{first['requests']} requests, {first['state']['bytes_downloaded']:,} bytes, "
                 f"{first['parses']} parses, {first['embeds']} embedding calls"],
            ]
            again = run(src, site)
            rows += [
                ["unchanged re-crawl, ETag/Last-Modified: bodies / parses / embedding calls",
                 f"{again['bodies']} / {again['parses']} / {again['embeds']}",
                 f"{again['304']} answered 304, {again['requests']} requests, "
                 f"{again['state']['bytes_downloaded']:,} bytes; {describe(again)}", "target 0 / 0 / 0"],
                ["unchanged re-crawl, s", round(again["seconds"], 1), f"first crawl {first['seconds']:.1f} s",
                 f"{first['seconds'] / max(again['seconds'], 1e-3):.0f}x faster"],
            ]
            # one changed (a page the sitemap does not date), one removed, one added: published in the sitemap,
            # as a site's generator would, so no other page's text changes with it
            changed = 1 if args.pages > 1 else 0
            site.page(f"/p/{changed}", page(changed, args.pages, version=2))
            removed = args.pages - 1
            del site.pages[f"/p/{removed}"]
            site.page("/p/new", page(args.pages + 1, args.pages + 2))
            site.page("/sitemap.xml", sitemap(
                [(site.url(f"/p/{i}"), "2026-11-01" if i % 2 == 0 else None) for i in range(args.pages - 1)]
                + [(site.url("/p/new"), "2026-12-01")]),
                content_type="application/xml")
            delta = run(src, site)
            c = delta["state"]["counts"]
            rows.append(["1 changed, 1 removed, 1 added: updated / removed / new",
                         f"{c['updated']} / {c['removed']} / {c['new']}",
                         f"{delta['bodies']} bodies, {delta['embeds']} embedding calls; {describe(delta)}",
                         "target 1 / 1 / 1"])

            plain_site = Site(validators=False)
            sites.append(plain_site)
            build(plain_site, args.plain_pages, stamp="2026-12-04T05:00:00Z", lastmod=False)
            src2 = source(plain_site, "bench web no validators")
            run(src2, plain_site)
            build(plain_site, args.plain_pages, stamp="2026-12-04T06:00:00Z", lastmod=False)
            stamped = run(src2, plain_site)
            rows.append([f"re-crawl of {args.plain_pages} pages, no validators, a new timestamp in every page: "
                         "bodies / parses / embedding calls",
                         f"{stamped['bodies']} / {stamped['parses']} / {stamped['embeds']}",
                         describe(stamped), "target - / 0 / 0 (the text decides)"])
        finally:
            tasks.hand_off = original_hand_off  # type: ignore[assignment]
            for s in sites:
                s.close()
            rt.stop()

    table(f"Web crawl: a generated site of {args.pages} pages on loopback, local runtime, local model",
          ["figure", "Sluice", "comparison", "ratio / target"], rows, number_format="{:,}")
    print(json.dumps({"pages": args.pages}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
