"""``sluice demo``: start the local runtime, ingest a folder over the HTTP API with a
progress bar, and print search results — the whole path a user takes."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sluice.config import get_settings
from sluice.local.runtime import LocalRuntime, free_port, project_root
from sluice.local.tokens import mint

DEFAULT_QUERIES = [
    "How does Sluice keep uploaded documents encrypted?",
    "What happens when a document fails to index?",
]


def run_demo(folder: Path | None = None, *, queries: list[str] | None = None) -> int:
    console = Console()
    folder = folder or project_root() / "examples"
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
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
        for query in queries or DEFAULT_QUERIES:
            answer = api.post("/rag/search", json={"query": query, "collections": [kb["collection_name"]]}).json()
            table = Table(title=f"“{query}”")
            for col in ("score", "file", "chunk", "text"):
                table.add_column(col)
            for r in answer.get("results", []):
                table.add_row(f"{r['score']:.3f}", r["filename"], str(r["chunk_index"]),
                              r["content"][:100].replace("\n", " ") + "…")
            console.print(table)
    return 0
