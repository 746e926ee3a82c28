"""The azure_blob, gcs and git connectors against real servers (R-SYNC-7): an unchanged re-sync of 1,000
files on each, a 1-file change in a 1,000-file git repository, and the sync function's unzipped size.
sharepoint has no local server: its rows are against the Graph double (tests/graph_double.py), which
counts requests and downloads as the real service would be asked them, not how fast the service is.

    .venv/bin/python bench/connectors.py                 # 1,000 files per store, ~10 minutes on 2 cores
    .venv/bin/python bench/connectors.py --files 100 --skip-size

Each store is a real server on loopback, started as the tests start them (tests/remote_servers.py):
Azurite (npm), gcp-storage-emulator (PyPI) and git's own ``http-backend``. Runs go through the local
runtime (`sluice local up`'s stack: the state machine of template.yaml, the ordinary pipeline) with a
deterministic fake embedder whose calls are counted; each connector's downloads are counted at its
``_fetch`` (calls and bytes written), and the git server logs the bytes it answered. Targets: an
unchanged run downloads 0 bytes and embeds nothing; git's 1-file change fetches that blob and one tree
walk; the sync function fits Lambda's 250 MB unzipped with the connectors' clients.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import print_table as table

ROOT = Path(__file__).resolve().parents[1]
MB = 1024 * 1024
LIMIT = 262_144_000  # Lambda's 250 MB unzipped, as it counts it


def doc(i: int, version: int = 1) -> bytes:
    return (f"# Page {i}\n\nRevision {version}. Page {i} describes procedure {i * 7 % 1000} of the handbook: who "
            f"asks, who approves, and where the record of request {i} is kept.\n").encode()


class Counts:
    def __init__(self) -> None:
        self.fetches = 0
        self.bytes = 0
        self.embeds = 0
        self.lock = threading.Lock()

    def snapshot(self) -> tuple[int, int, int]:
        with self.lock:
            return self.fetches, self.bytes, self.embeds


def sizes(skip: bool) -> list[list[object]]:
    """The sync function's code and layers, unzipped, installed as the build installs them."""
    if skip:
        return [["sync function unzipped, MB", "skipped (--skip-size)", "250", "-"]]

    def tree(path: Path) -> int:
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())

    def layer(requirements: str, drop: tuple[str, ...] = ()) -> int | None:
        with tempfile.TemporaryDirectory(prefix="sluice-size-") as tmp:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
                 "--target", tmp, "--implementation", "cp", "--python-version", "3.12", "--only-binary=:all:",
                 "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64", "-r", requirements],
                capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"pip could not install {requirements}: {done.stderr[-500:]}", file=sys.stderr)
                return None
            for name in os.listdir(tmp):
                if name.startswith(drop):
                    subprocess.run(["rm", "-rf", os.path.join(tmp, name)], check=False)
            return tree(Path(tmp))

    connectors = layer(str(ROOT / "layers" / "connectors" / "requirements.txt"))
    deps = layer(str(ROOT / "layers" / "deps" / "requirements.txt"), ("boto3", "botocore", "s3transfer", "bin"))
    code = (tree(ROOT / "functions" / "synctask") + tree(ROOT / "shared" / "sluice")
            + tree(ROOT / "infra" / "migrations"))
    if connectors is None or deps is None:
        return [["sync function unzipped, MB", "not measured (pip could not install a layer)", "250", "-"]]
    total = connectors + deps + code
    return [["ConnectorsLayer unzipped, MB", round(connectors / MB, 1), "-", "-"],
            ["sync function unzipped (code + SluiceLayer + DepsLayer + ConnectorsLayer), MB", round(total / MB, 1),
             "Lambda's limit 250", f"{total / LIMIT:.0%} of it"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--skip-size", action="store_true", help="do not measure the layers (needs PyPI)")
    parser.add_argument("--stores", default="azure_blob,gcs,git,sharepoint")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    os.environ["SYNC_ALLOWED_HOSTS"] = "127.0.0.0/8"

    import httpx

    from sluice import wiring
    from sluice.config import get_settings
    from sluice.local.runtime import LocalRuntime
    from sluice.local.tokens import mint
    from sluice.sync.connectors import CONNECTORS
    from tests.e2e.sync_support import make_secret
    from tests.fakes import FakeEmbedder
    from tests.remote_servers import (
        AZURITE_ACCOUNT,
        AZURITE_KEY,
        Azurite,
        GcsEmulator,
        TokenEndpoint,
        git_server,
        service_account_key,
    )

    counts: dict[str, Counts] = {name: Counts() for name in CONNECTORS}
    for name, cls in CONNECTORS.items():
        def counted(self: Any, file: Any, target: Path, max_bytes: int, _orig: Callable[..., None] = cls._fetch,
                    _c: Counts = counts[name]) -> None:
            _orig(self, file, target, max_bytes)
            with _c.lock:
                _c.fetches += 1
                _c.bytes += target.stat().st_size

        cls._fetch = counted  # type: ignore[method-assign]

    rows: list[list[object]] = []
    cleanups: list[Callable[[], None]] = []
    with tempfile.TemporaryDirectory(prefix="sluice-bench-connectors-") as tmp:
        rt = LocalRuntime(data_dir=Path(tmp) / "rt", api_port=0).start()
        try:
            os.environ["SYNC_ALLOWED_HOSTS"] = "127.0.0.0/8"  # the runtime applied the template's
            from sluice.config import reset_settings

            reset_settings()
            wiring.sync_context.cache_clear()
            stage = wiring.stage_context()
            fake = FakeEmbedder()
            original = fake.embed_documents
            current: list[str] = [""]

            def embed(texts: list[str]) -> list[list[float]]:
                c = counts[current[0]]
                with c.lock:
                    c.embeds += 1
                return original(texts)

            fake.embed_documents = embed  # type: ignore[method-assign]
            stage.embedder_for = lambda spec: fake
            token = mint(get_settings().dev_jwt_secret, user="bench", org="bench",
                         permissions=["collections:edit", "secrets:view"], app_admin=False)
            api = httpx.Client(base_url=rt.api_url, timeout=300, headers={"Authorization": f"Bearer {token}"})

            def run(source: dict[str, Any]) -> tuple[dict[str, Any], float]:
                started = time.perf_counter()
                run_id = api.post(f"/kb/{source['kb_id']}/sync-sources/{source['id']}/run").json()["id"]
                while True:
                    state = api.get(f"/rag/sync/logs/{run_id}").json()
                    if state["status"] not in ("queued", "running"):
                        return state, time.perf_counter() - started
                    time.sleep(0.25)

            def source(connector: str, config: dict[str, Any], kind: str, secret: dict[str, str]) -> dict[str, Any]:
                kb = api.post("/kb", json={"name": f"bench {connector}", "scope": "org"}).json()
                sid = make_secret(rt, "bench", kind=kind, value=secret)
                resp = api.post(f"/kb/{kb['id']}/sync-sources", json={
                    "name": connector, "connector": connector, "config": config, "secret_id": sid})
                assert resp.status_code == 201, resp.text
                return dict(resp.json())

            for store in args.stores.split(","):
                current[0] = store
                git = graph = None
                if store == "azure_blob":
                    az = Azurite()
                    cleanups.append(az.close)
                    container = az.service().create_container("bench")
                    for i in range(args.files):
                        container.upload_blob(f"pages/{i:05d}.md", doc(i))
                    src = source(store, {"account": AZURITE_ACCOUNT, "container": "bench", "endpoint": az.endpoint},
                                 "azure_storage", {"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY})
                    label = "Azurite"
                elif store == "gcs":
                    gcs, tok = GcsEmulator(), TokenEndpoint()
                    cleanups += [gcs.close, tok.close]
                    bucket = gcs.client().create_bucket("bench")
                    for i in range(args.files):
                        bucket.blob(f"pages/{i:05d}.md").upload_from_string(doc(i))
                    src = source(store, {"bucket": "bench", "endpoint": gcs.endpoint}, "gcp_service_account",
                                 service_account_key(tok.url))
                    label = "gcp-storage-emulator"
                elif store == "sharepoint":
                    from tests.graph_double import SITE_HOST, SITE_PATH, GraphDouble

                    graph = GraphDouble()
                    cleanups.append(graph.close)
                    for i in range(args.files):
                        graph.put(f"pages/{i:05d}.md", doc(i))
                    src = source(store, {"site_url": f"https://{SITE_HOST}/{SITE_PATH}", "folder": "pages"},
                                 "microsoft_app", graph.secret())
                    label = "Graph double (sharepoint)"
                else:
                    git = git_server(Path(tmp) / "git")
                    cleanups.append(git.close)
                    git.commit({f"pages/{i:05d}.md": doc(i) for i in range(args.files)})
                    src = source(store, {"url": git.url}, "git_token", {"token": git.token})
                    label = "git http-backend"
                c = counts[store]
                before = c.snapshot()
                first, t1 = run(src)
                c1 = tuple(a - b for a, b in zip(c.snapshot(), before, strict=True))
                log_at = len(git.log) if git else len(graph.log) if graph else 0
                before = c.snapshot()
                second, t2 = run(src)
                c2 = tuple(a - b for a, b in zip(c.snapshot(), before, strict=True))
                wire = sum(r.sent for r in git.requests_since(log_at)) if git else None
                rows += [
                    [f"{label}: first run ({first['status']}, {first['counts']['new']} new), s", round(t1, 1),
                     f"{c1[0]} downloads, {c1[1]:,} bytes, {c1[2]} embedding calls", "-"],
                    [f"{label}: unchanged re-sync, s", round(t2, 2), f"first run {t1:.1f} s",
                     f"{t1 / max(t2, 1e-3):.0f}x faster"],
                    [f"{label}: unchanged re-sync downloads / bytes / embedding calls",
                     f"{c2[0]} / {c2[1]} / {c2[2]}", f"listed {second['counts']['listed']}", "target 0 / 0 / 0"],
                ]
                if graph is not None:
                    asked = [r.path.rsplit("/", 1)[-1] for r in graph.log[log_at:]]
                    rows.append([f"{label}: unchanged re-sync, requests to the double", len(asked),
                                 " + ".join(asked), "a token and one delta request"])
                    graph.put(f"pages/{args.files // 2:05d}.md", doc(args.files // 2, 2))
                    log_at, before = len(graph.log), c.snapshot()
                    third, t3 = run(src)
                    c3 = tuple(a - b for a, b in zip(c.snapshot(), before, strict=True))
                    rows.append([f"{label}: 1-file change in {args.files:,} files: downloads / bytes, s",
                                 f"{c3[0]} / {c3[1]:,}, {t3:.2f}",
                                 f"{graph.downloads(log_at)} download(s) on the double, "
                                 f"{len(graph.requests(log_at, '/delta'))} delta pages",
                                 f"{third['counts']['updated']} updated"])
                if git is not None:
                    rows.append([f"{label}: unchanged re-sync on the wire, bytes (requests)",
                                 f"{wire:,} ({len(git.requests_since(log_at))})", "one ls-refs", "-"])
                    git.commit({f"pages/{args.files // 2:05d}.md": doc(args.files // 2, 2)})
                    blob = git.blob_id(f"pages/{args.files // 2:05d}.md")
                    blob_size = len(doc(args.files // 2, 2))
                    log_at = len(git.log)
                    before = c.snapshot()
                    third, t3 = run(src)
                    c3 = tuple(a - b for a, b in zip(c.snapshot(), before, strict=True))
                    reqs = git.requests_since(log_at)
                    trees = sum(r.sent for r in reqs if r.command == "fetch" and blob not in r.wants)
                    blobs = sum(r.sent for r in reqs if r.command == "fetch" and blob in r.wants)
                    other = sum(r.sent for r in reqs if r.command != "fetch")
                    rows += [
                        [f"{label}: 1-file change in {args.files:,} files: bytes fetched (trees + blob + refs)",
                         f"{trees + blobs + other:,}",
                         f"one tree walk {trees:,} + the blob's pack {blobs:,} (file {blob_size} bytes) + refs "
                         f"{other:,}", f"{c3[0]} download(s), {third['counts']['updated']} updated"],
                        [f"{label}: 1-file change run, s", round(t3, 2), f"first run {t1:.1f} s", "-"],
                    ]
        finally:
            for close in cleanups:
                close()
            rt.stop()

    rows += sizes(args.skip_size)
    table(f"Connectors against real servers: {args.files:,} files per store, local runtime, fake embedder",
          ["figure", "Sluice", "comparison", "ratio / target"], rows, number_format="{:,}")
    print(json.dumps({"files": args.files}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
