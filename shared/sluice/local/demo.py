"""``sluice demo``: start the local runtime, ingest a folder over the HTTP API with a
progress bar, and print search results — the whole path a user takes. ``sluice demo --web``
crawls a small site instead (``examples/site``, served on loopback) through a ``web`` sync source,
twice: the second run asks each page whether it changed and fetches and embeds nothing."""

from __future__ import annotations

import functools
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sluice.config import get_settings, reset_settings
from sluice.local.runtime import LocalRuntime, free_port, project_root
from sluice.local.tokens import mint

DEFAULT_QUERIES = [
    "How does Sluice keep uploaded documents encrypted?",
    "What happens when a document fails to index?",
]
WEB_QUERIES = ["Which hitch goes on the bow line?", "When can the harbour bar be crossed?"]
# The folder of examples/ that --web serves (the file demo leaves it out).
SITE = "site"


def run_demo(folder: Path | None = None, *, queries: list[str] | None = None) -> int:
    console = Console()
    default = folder is None
    folder = folder or project_root() / "examples"
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")
                   and not (default and SITE in p.relative_to(folder).parts[:1]))
    if not files:
        console.print(f"[red]No files in {folder}[/red]")
        return 1
    with tempfile.TemporaryDirectory(prefix="sluice-demo-") as tmp, \
            LocalRuntime(data_dir=Path(tmp), api_port=free_port()) as runtime:
        token = mint(get_settings().dev_jwt_secret, user="demo-user")
        api = httpx.Client(base_url=runtime.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        kb = api.post("/kb", json={"name": "Demo"}).raise_for_status().json()
        console.print(f"Knowledge base [bold]{kb['name']}[/bold] → collection {kb['collection_name']}")
        ids: dict[str, str] = {}
        for path in files:
            with path.open("rb") as fh:
                resp = api.post(f"/kb/{kb['id']}/documents", files={"file": (path.name, fh)})
            if resp.status_code != 202:
                console.print(f"[yellow]{path.name}: {resp.json()['error']['message']}[/yellow]")
                continue
            ids[resp.json()["id"]] = path.name
        with Progress(TextColumn("Indexing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console) as progress:
            task = progress.add_task("index", total=len(ids))
            pending = dict(ids)
            deadline = time.monotonic() + 600
            while pending and time.monotonic() < deadline:
                for doc_id in list(pending):
                    doc = api.get(f"/rag/documents/{doc_id}").json()
                    if doc["status"] != "processing":
                        if doc["status"] == "error":
                            progress.console.print(f"[red]{pending[doc_id]}: {doc['error_message']}[/red]")
                        del pending[doc_id]
                        progress.advance(task)
                time.sleep(0.5)
        _print_searches(console, api, kb, queries or DEFAULT_QUERIES)
    return 0


def _print_searches(console: Console, api: httpx.Client, kb: dict[str, Any], queries: list[str]) -> None:
    for query in queries:
        answer = api.post("/rag/search", json={"query": query, "collections": [kb["collection_name"]]}).json()
        table = Table(title=f"“{query}”")
        for col in ("score", "file", "chunk", "text"):
            table.add_column(col)
        for r in answer.get("results", []):
            table.add_row(f"{r['score']:.3f}", r["filename"], str(r["chunk_index"]),
                          r["content"][:100].replace("\n", " ") + "…")
        console.print(table)


@contextmanager
def _served(folder: Path) -> Iterator[str]:
    """``folder`` as a static site on a loopback port; its base URL."""
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def _loopback_allowed() -> Iterator[None]:
    """The local stack's sync may reach 127.0.0.1 (SYNC_ALLOWED_HOSTS) while the demo runs."""
    before = os.environ.get("SYNC_ALLOWED_HOSTS")
    os.environ["SYNC_ALLOWED_HOSTS"] = ",".join(filter(None, [before, "127.0.0.1"]))
    reset_settings()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SYNC_ALLOWED_HOSTS", None)
        else:
            os.environ["SYNC_ALLOWED_HOSTS"] = before
        reset_settings()


def _run(api: httpx.Client, source: dict[str, Any], timeout: float = 300) -> dict[str, Any]:
    run_id = api.post(f"/kb/{source['kb_id']}/sync-sources/{source['id']}/run").raise_for_status().json()["id"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run: dict[str, Any] = api.get(f"/rag/sync/logs/{run_id}").raise_for_status().json()
        if run["status"] not in ("queued", "running"):
            return run
        time.sleep(0.5)
    raise TimeoutError(f"the sync run {run_id} did not finish within {timeout:g} s")


def run_web_demo(site: Path | None = None, *, queries: list[str] | None = None) -> int:
    """Crawl ``site`` (default ``examples/site``) through a web source, search it, then run it again."""
    console = Console()
    site = site or project_root() / "examples" / SITE
    with tempfile.TemporaryDirectory(prefix="sluice-demo-") as tmp, _served(site) as url, _loopback_allowed(), \
            LocalRuntime(data_dir=Path(tmp), api_port=free_port()) as runtime:
        token = mint(get_settings().dev_jwt_secret, user="demo-user", org="demo-org",
                     permissions=["collections:view", "collections:edit"])
        api = httpx.Client(base_url=runtime.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        kb = api.post("/kb", json={"name": "Harbour site", "scope": "org"}).raise_for_status().json()
        source = api.post(f"/kb/{kb['id']}/sync-sources", json={
            "name": "harbour site", "connector": "web", "secret_id": None,
            "config": {"seed_urls": [url], "scope": "host", "rate_limit": 600}}).raise_for_status().json()
        console.print(f"Web source [bold]{source['name']}[/bold] → {url} (collection {kb['collection_name']})")
        for label in ("first run", "second run"):
            run = _run(api, source)
            c = run["counts"]
            console.print(f"{label}: {run['status']}; listed {c['listed']}, new {c['new']}, updated {c['updated']}, "
                          f"unchanged {c['unchanged']}, failed {c['failed']}, removed {c['removed']}; "
                          f"{run.get('requests_made')} requests, {run.get('bytes_downloaded')} bytes downloaded")
            if label == "first run":
                _print_searches(console, api, kb, queries or WEB_QUERIES)
    return 0
