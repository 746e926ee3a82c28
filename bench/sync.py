"""Source sync runs through the local runtime (issue 14): a first run over a bucket of 2,000 real
documents, a second run over the unchanged bucket, and a run after 1% of the objects changed.

    .venv/bin/python bench/sync.py                      # 2,000 objects, ~10 minutes on 2 cores
    .venv/bin/python bench/sync.py --objects 200 --embedder local

The local runtime (embedded PostgreSQL, moto, the pumps, the gateway and the state machine of
template.yaml on moto's interpreter) is started as `sluice local up` starts it. The remote bucket
is a moto bucket filled with files of the real corpus that its manifest expects to parse, reused
under different keys. The runs' S3 client is wrapped to count GetObject calls and the bytes read;
the pipeline embeds with a deterministic fake that counts its calls (``--embedder local`` uses the
bundled all-MiniLM-L6-v2 instead: slower first runs, the same second run). Targets: the unchanged
run reads 0 bytes and makes 0 embedding calls, and is at least 20x faster than the first; the run
after changing 1% re-ingests exactly those objects.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from harness import print_table as table

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "real"


def corpus_files(max_bytes: int = 300_000) -> list[tuple[str, bytes]]:
    """Files of the real corpus its manifest expects to parse to text (archives and mail left out)."""
    out = []
    for line in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:]:
        cols = line.split("\t")
        path, expectation = cols[0], cols[5]
        if expectation != "parse_text" or path.split("/")[0] in ("zip", "targz", "other", "malicious"):
            continue
        data = (CORPUS / path).read_bytes()
        if 0 < len(data) <= max_bytes:
            out.append((Path(path).name, data))
    return out


class Counter:
    def __init__(self) -> None:
        self.gets = 0
        self.bytes = 0
        self.embeds = 0
        self.lock = threading.Lock()

    def snapshot(self) -> tuple[int, int, int]:
        with self.lock:
            return self.gets, self.bytes, self.embeds


class CountedS3:
    def __init__(self, client: Any, counter: Counter) -> None:
        self._client, self._counter = client, counter

    def get_object(self, **kw: Any) -> Any:
        resp = self._client.get_object(**kw)
        body, counter = resp["Body"], self._counter

        class Body:
            def read(self, *args: Any) -> bytes:
                data: bytes = body.read(*args)
                with counter.lock:
                    counter.bytes += len(data)
                return data

            def close(self) -> None:
                body.close()

        with counter.lock:
            counter.gets += 1
        resp["Body"] = Body()
        return resp

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--changed", type=float, default=0.01, help="share of the objects changed for the third run")
    parser.add_argument("--unchanged-runs", type=int, default=3, help="unchanged runs (the median is reported)")
    parser.add_argument("--embedder", choices=["fake", "local"], default="fake")
    parser.add_argument("--compare", type=int, default=200,
                        help="the first N objects also uploaded through the API, for the pipeline's own documents/min")
    args = parser.parse_args()
    if not (CORPUS / "MANIFEST.tsv").is_file():
        print(f"bench/sync.py needs the real corpus at {CORPUS}; it is not there, so nothing was measured.")
        return 0
    logging.disable(logging.WARNING)
    files = corpus_files()

    import boto3
    import httpx

    from sluice import wiring
    from sluice.config import get_settings
    from sluice.local.runtime import LocalRuntime
    from sluice.local.tokens import mint
    from tests.fakes import FakeEmbedder

    counter = Counter()
    with tempfile.TemporaryDirectory(prefix="sluice-bench-sync-") as tmp:
        rt = LocalRuntime(data_dir=Path(tmp), api_port=0).start()
        try:
            stage = wiring.stage_context()
            if args.embedder == "fake":
                fake = FakeEmbedder()
                original = fake.embed_documents

                def embed(texts: list[str]) -> list[list[float]]:
                    with counter.lock:
                        counter.embeds += 1
                    return original(texts)

                fake.embed_documents = embed  # type: ignore[method-assign]
                stage.embedder_for = lambda spec: fake
            else:
                real = stage.embedder_for

                def counted_for(spec: Any) -> Any:
                    embedder = real(spec)
                    inner = embedder.embed_documents

                    def embed(texts: list[str]) -> list[list[float]]:
                        with counter.lock:
                            counter.embeds += 1
                        return inner(texts)

                    embedder.embed_documents = embed
                    return embedder

                stage.embedder_for = counted_for
            opener = wiring.sync_context().connectors
            make = opener.client_factory
            opener.client_factory = lambda service, region, keys: (
                CountedS3(make(service, region, keys), counter) if service == "s3" else make(service, region, keys))

            s3 = boto3.client("s3", endpoint_url=rt.moto_url, region_name="us-east-1")
            sm = boto3.client("secretsmanager", endpoint_url=rt.moto_url, region_name="us-east-1")
            bucket = f"bench-remote-{uuid.uuid4().hex[:8]}"
            s3.create_bucket(Bucket=bucket)
            keys = []
            for i in range(args.objects):
                name, data = files[i % len(files)]
                key = f"set{i % 40:02d}/{i:05d}_{name}"
                s3.put_object(Bucket=bucket, Key=key, Body=data)
                keys.append(key)
            secret = sm.create_secret(Name="bench-reader", SecretString=json.dumps(
                {"access_key_id": "testing", "secret_access_key": "testing"}), Tags=[
                {"Key": "sluice:provider", "Value": "aws_credentials"}, {"Key": "sluice:org_id", "Value": "bench"}])
            token = mint(get_settings().dev_jwt_secret, user="bench", org="bench",
                         permissions=["collections:edit", "secrets:view"], app_admin=False)
            api = httpx.Client(base_url=rt.api_url, timeout=300, headers={"Authorization": f"Bearer {token}"})
            kb = api.post("/kb", json={"name": "bench sync", "scope": "org"}).json()
            source = api.post(f"/kb/{kb['id']}/sync-sources", json={
                "name": "bench", "connector": "s3", "config": {"bucket": bucket}, "secret_id": secret["ARN"]}).json()

            def run() -> tuple[dict[str, Any], float, tuple[int, int, int]]:
                before = counter.snapshot()
                started = time.perf_counter()
                run_id = api.post(f"/kb/{kb['id']}/sync-sources/{source['id']}/run").json()["id"]
                while True:
                    state = api.get(f"/rag/sync/logs/{run_id}").json()
                    if state["status"] not in ("queued", "running"):
                        break
                    time.sleep(0.25)
                elapsed = time.perf_counter() - started
                after = counter.snapshot()
                return state, elapsed, (after[0] - before[0], after[1] - before[1], after[2] - before[2])

            def outcomes(run_id: str) -> dict[str, str]:
                out: dict[str, str] = {}
                offset: int | None = 0
                while offset is not None:
                    page = api.get(f"/rag/sync/logs/{run_id}/files", params={"offset": offset, "limit": 1000}).json()
                    out.update({f["source_path"]: f["outcome"] for f in page["files"]})
                    offset = page["next_offset"]
                return out

            first, t1, c1 = run()
            print(f"first run: {first['status']} in {t1:.1f} s: {first['counts']}", file=sys.stderr)
            unchanged = [run() for _ in range(args.unchanged_runs)]
            t2 = statistics.median(u[1] for u in unchanged)
            worst = tuple(max(u[2][i] for u in unchanged) for i in range(3))
            c2 = unchanged[-1][0]["counts"]

            n_changed = max(1, round(args.objects * args.changed))
            changed = keys[:: max(1, len(keys) // n_changed)][:n_changed]
            for key in changed:
                body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
                s3.put_object(Bucket=bucket, Key=key, Body=body + b"\n\nChanged for the benchmark.\n")
            third, t3, c3 = run()
            third_outcomes = outcomes(third["id"])
            reingested = {p for p, o in third_outcomes.items() if o in ("new", "updated")}
            exact = reingested == {f"s3://{bucket}/{k}" for k in changed}

            # The same files uploaded through the API into another base: the pipeline's own pace.
            uploads = min(args.compare, args.objects)
            other = api.post("/kb", json={"name": "bench uploads", "scope": "org"}).json()
            started = time.perf_counter()
            for i in range(uploads):
                name, data = files[i % len(files)]
                api.post(f"/kb/{other['id']}/documents", files={"file": (name, data)})
            while True:
                status = api.get(f"/kb/{other['id']}/ingestion").json()
                if status["indexing_status"] == "complete" and status["document_count"] == uploads:
                    break
                time.sleep(0.5)
            t_up = time.perf_counter() - started
            up_rate = status["indexed_count"] / t_up * 60
        finally:
            rt.stop()

    counts1 = first["counts"]
    table(f"Sync runs over a bucket of {args.objects:,} real-corpus objects ({len(files)} distinct files reused "
          f"under different keys), local runtime, embedder: {args.embedder}",
          ["figure", "Sluice", "comparison", "ratio"], [
              ["first run: files new / failed / ignored",
               f"{counts1['new']} / {counts1['failed']} / {counts1['ignored']}", "-", "-"],
              ["first run, s (POST to finished)", round(t1, 1), "-", "-"],
              ["first run, documents/min", round(counts1["ingested"] / t1 * 60, 1),
               f"{uploads} uploads through the API: {up_rate:.1f}", f"{counts1['ingested'] / t1 * 60 / up_rate:.2f}"],
              [f"unchanged run, s (median of {len(unchanged)})", round(t2, 2), f"first run {t1:.1f} s",
               f"{t1 / t2:.0f}x faster (target >= 20x)"],
              ["unchanged run: skipped (unchanged + ignored) / listed", f"{c2['skipped']} / {c2['listed']}", "-", "-"],
              ["unchanged run: GetObject calls / bytes (worst run)", f"{worst[0]} / {worst[1]}",
               f"first run {c1[0]} / {c1[1]:,}", "target 0 / 0"],
              ["unchanged run: embedding calls (worst run)", worst[2], f"first run {c1[2]}", "target 0"],
              [f"{args.changed:.0%} changed ({n_changed} objects): re-ingested", len(reingested), n_changed,
               "exactly those" if exact else "NOT exactly those"],
              [f"{args.changed:.0%} changed: GetObject calls / embedding calls", f"{c3[0]} / {c3[2]}",
               f"{n_changed} objects", "-"],
              [f"{args.changed:.0%} changed run, s", round(t3, 1), f"first run {t1:.1f} s", f"{t1 / t3:.0f}x faster"],
          ], number_format="{:,}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
