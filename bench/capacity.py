"""Service time of each stage, per unit of work, with spread (issue 30), and the Lambda sizes they run at.

    nice -n 10 .venv/bin/python bench/capacity.py            # ~3 min on the shared machine
    nice -n 10 .venv/bin/python bench/capacity.py --quick    # fewer files and repeats (~1 min)

Measured here, in this process, one core's worth (the parse child and the model's threads as the
stages run them): parse per format and per MB (the real corpus, up to N files a format, in process
the way the parse child reads), chunk per 100,000 characters (the default plan), embed per chunk
(the bundled all-MiniLM-L6-v2, ONNX fp32; int8 when an export can be built), store per 1,000 chunks
(one binary COPY into a collection table made by ``vectors.store.ensure_table``: HNSW, GIN, btree and
hash indexes and the lexical-statistics triggers), teardown per 10,000 chunks (``delete_chunks_of``,
1,000 a batch), teardown per 1,000 objects (``teardown.steps.objects_of`` and ``_delete`` against
moto's S3 in process: Sluice's CPU and moto's, not S3's latency; the documented DeleteObjects limit
beside it), sync decide per 1,000 unchanged objects (``sync.tasks`` list and batch tasks of a run
over a listing whose 1,000 files the base holds as done documents with this source's claims).
Search at 100k chunks, idle and while a writer COPYs into the same table, is read from the last
``bench/search_latency.py --sluice-only --with-writes`` run (bench/out/search_latency.json, its date
printed): its table's HNSW build takes minutes. The 1M figure is cited from an earlier run. The
figures go to bench/out/capacity.json, which bench/simulate.py reads.

Lambda gives CPU in proportion to memory, one vCPU at 1,769 MB (docs.aws.amazon.com/lambda/latest/dg/
configuration-memory.html, looked up 2026-12-02). Assumption: one core of this machine is one Lambda
vCPU; not verified on AWS (both are x86 server cores of a few GHz; Lambda's may be older).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

from harness import ROOT, migrated_database, print_table

# ../shared beside the checkout (main), or beside the worktrees' folder (/work/wt/<name>).
CORPUS = next(
    (
        p / "shared" / "corpus" / "real"
        for p in (ROOT.parent, ROOT.parent.parent)
        if (p / "shared" / "corpus" / "real").is_dir()
    ),
    ROOT.parent / "shared" / "corpus" / "real",
)
OUT = ROOT / "bench" / "out"
MB_PER_VCPU = 1769


def spread(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95, ordered[-1]


def parse_times(per_format: int) -> tuple[dict[str, list[tuple[float, int, int]]], list[str]]:
    """(seconds, bytes, characters) per file, by extension, and the texts read."""
    from sluice.config import get_settings
    from sluice.errors import DocumentRefused
    from sluice.parsing import ParseBudget, extract, isolation, sniff

    isolation._skip_optional_imports()
    budget = ParseBudget.from_settings(get_settings())
    by_format: dict[str, list[tuple[float, int, int]]] = defaultdict(list)
    texts: list[str] = []
    if not (CORPUS / "MANIFEST.tsv").is_file():
        print("parse: skipped, ../shared/corpus/real is absent")
        return by_format, texts
    for line in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:]:
        cols = line.split("\t")
        if cols[5] != "parse_text":
            continue
        path = CORPUS / cols[0]
        ext = path.suffix.lower() or "(none)"
        if len(by_format[ext]) >= per_format or not path.is_file() or path.stat().st_size > 3_000_000:
            continue
        data = path.read_bytes()
        try:
            started = time.perf_counter()
            text = extract(data, sniff(data, path.name), budget).text
            seconds = time.perf_counter() - started
        except DocumentRefused:
            continue
        by_format[ext].append((seconds, len(data), len(text)))
        texts.append(text)
    return {k: v for k, v in by_format.items() if v}, texts


def chunk_times(texts: list[str], repeats: int) -> tuple[list[float], list[str]]:
    from sluice.chunking import split_text
    from sluice.chunking.config import IngestionConfig, resolve_plan

    plan = resolve_plan(IngestionConfig(), max_input_tokens=256)
    body = "\n\n".join(texts)
    while len(body) < 100_000:
        body += "\n\n" + body
    body = body[:100_000]
    times = []
    chunks: list[str] = []
    for _ in range(repeats):
        started = time.perf_counter()
        chunks = [c.content for c in split_text(body, plan)]
        times.append(time.perf_counter() - started)
    return times, chunks


def embed_times(chunks: list[str], batches: int, batch: int) -> dict[str, list[float]]:
    """Seconds per chunk, one figure per provider batch."""
    from sluice.embedding.local import MINILM, local_model

    encoders = {"fp32": local_model(MINILM)}
    try:
        import tempfile

        from harness import exported

        encoders["int8"] = exported("int8", Path(tempfile.mkdtemp(prefix="sluice-int8-")))
    except Exception as error:  # the export needs onnx (the model extra)
        print(f"embed int8: skipped ({type(error).__name__}: {error})")
    out: dict[str, list[float]] = {}
    for name, encoder in encoders.items():
        encoder.encode(chunks[:batch])  # warm, as a warm Lambda is
        per = []
        for n in range(batches):
            texts = (chunks * (1 + batch * batches // max(1, len(chunks))))[n * batch : (n + 1) * batch]
            started = time.perf_counter()
            encoder.encode(texts)
            per.append((time.perf_counter() - started) / len(texts))
        out[name] = per
    return out


def store_times(url: str, chunks: list[str], repeats: int) -> tuple[list[float], list[float], list[float]]:
    """COPY 1,000 chunks a transaction; then delete 10,000 chunks 1,000 a batch (teardown)."""
    import numpy as np
    import psycopg
    from psycopg.rows import dict_row

    from sluice.db.connection import _configure
    from sluice.vectors import store

    rng = np.random.default_rng(30)
    collection = "capacity_probe"
    kb = uuid.uuid4()
    copy_s, txn_s = [], []
    with psycopg.connect(url, row_factory=dict_row) as conn:
        _configure(conn)
        store.ensure_table(conn, collection, 384)
        conn.commit()
        for _ in range(max(repeats, 10)):
            doc = uuid.uuid4()
            vectors = rng.standard_normal((1000, 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            rows = [
                store.ChunkRow(doc, kb, "org", i, chunks[i % len(chunks)], vectors[i].tolist()) for i in range(1000)
            ]
            started = time.perf_counter()
            store.replace_document_chunks(conn, collection, doc, rows)
            copied = time.perf_counter()
            conn.commit()
            copy_s.append(copied - started)
            txn_s.append(time.perf_counter() - started)
        delete_s = []
        started = time.perf_counter()
        removed = 0
        while removed < 10_000:
            n = store.delete_chunks_of(conn, collection, [kb], [], limit=1000)
            conn.commit()
            if not n:
                break
            removed += n
        delete_s.append(time.perf_counter() - started)
        store.drop_table(conn, collection)
        conn.commit()
    return copy_s, txn_s, delete_s


def sync_decide_times(url: str, objects: int, repeats: int) -> dict[str, list[float]]:
    """Runs over a listing of ``objects`` files the base already holds unchanged: seconds per run of the
    ``list`` task and of every ``batch`` task (the Map's work), and of ``_gather`` (the indexed lookups
    and nothing else) within them.

    The base holds one ``done`` document and this source's claim per file, with the listing's ETag and
    size, written as a first run leaves them (``hand_off``'s row and claim, the embed stage's done). The
    remote side is a listing served from memory: the listing call is S3's, not Sluice's.
    """
    import hashlib
    import os

    from pydantic import BaseModel

    from sluice.config import get_settings, reset_settings
    from sluice.db import connection
    from sluice.db import document_claims as claims
    from sluice.db import documents as doc_repo
    from sluice.db import knowledge_bases as kb_repo
    from sluice.db import sync_runs as runs
    from sluice.db import sync_sources as sources
    from sluice.db.knowledge_bases import KnowledgeBase
    from sluice.db.sync_sources import SyncSource
    from sluice.sync import tasks
    from sluice.sync.connectors import ObjectStoreConnector, RemoteFile
    from sluice.sync.connectors.base import ListedPage
    from sluice.sync.context import SyncContext

    class Listed(ObjectStoreConnector):
        CONNECTOR_TYPE, TITLE, SECRET_KIND, SCHEME, CONFIG_MODEL = "memory", "memory", None, "mem", BaseModel

        def __init__(self, files: dict[str, tuple[int, str]]) -> None:
            self.container, self.prefix, self.files = "box", "", files

        @classmethod
        def open(cls, *args: object, **kwargs: object) -> Listed:
            raise NotImplementedError

        def _list_page(self, token: str | None) -> ListedPage:
            keys = sorted(self.files)
            start = int(token or 0)
            page = [RemoteFile(k, self.address(k), *self.files[k]) for k in keys[start : start + self.PAGE_SIZE]]
            more = start + self.PAGE_SIZE < len(keys)
            return ListedPage(page, str(start + self.PAGE_SIZE) if more else None)

        def _fetch(self, file: RemoteFile, target: Path, max_bytes: int) -> None:
            raise AssertionError(f"an unchanged file was fetched: {file.key}")

    os.environ["DATABASE_URL"] = url
    reset_settings()
    connection.close_pool()
    settings = get_settings().model_copy(update={"sync_await_seconds": 0})
    files = {f"docs/{n:05d}.md": (2_000 + n, hashlib.md5(str(n).encode()).hexdigest())  # noqa: S324
             for n in range(objects)}
    remote = Listed(files)

    class Opener:
        def open(self, source: SyncSource, kb: KnowledgeBase) -> Listed:
            return remote

    ctx = SyncContext(uow=connection.transaction, store=None, settings=settings,  # type: ignore[arg-type]
                      connectors=Opener())  # type: ignore[arg-type]
    collection = f"capacity_sync_{uuid.uuid4().hex[:6]}"
    with connection.transaction() as conn:
        kb = kb_repo.insert(conn, KnowledgeBase(
            id=uuid.uuid4(), name="Capacity", collection_name=collection, scope="org", owner_id=None, org_id="acme",
            is_default=False, description="", embedding_provider="local", embedding_model="all-MiniLM-L6-v2",
            embedding_dim=384, embedding_base_url=None, embedding_secret_id=None, ingestion_config={},
            created_by="capacity"))
        source = sources.insert(conn, SyncSource(
            id=uuid.uuid4(), kb_id=kb.id, name="listing", connector="memory", config={}, secret_id=None,
            sync_mode="new_only", organizational_unit="ops", schedule=None, created_by="capacity"))
        for key, (size, etag) in files.items():
            path = remote.address(key)
            doc = doc_repo.insert(
                conn, kb_id=kb.id, org_id="acme", collection_name=collection, filename=key.rsplit("/", 1)[-1],
                filesize=size, storage_path=f"rag/{collection}/{uuid.uuid4()}_{key.rsplit('/', 1)[-1]}",
                source="sync", source_path=path, source_etag=etag,
                content_hash=hashlib.sha256(key.encode()).hexdigest(),
                organizational_unit="ops", uploaded_by=f"sync:{source.id}", status="done", chunk_count=3)
            claims.claim(conn, source.id, doc.id, path, etag, size)
    for table in ("documents", "document_claims", "sync_logs"):
        with connection.transaction() as conn:
            conn.execute(f"ANALYZE {table}")  # as autovacuum would have after a first run of this size

    gathered: list[float] = []
    real_gather = tasks._gather

    def timed_gather(*args: object) -> object:
        started = time.perf_counter()
        try:
            return real_gather(*args)  # type: ignore[arg-type]
        finally:
            gathered.append(time.perf_counter() - started)

    out: dict[str, list[float]] = {"list": [], "batches": [], "gather": [], "per_batch": []}
    tasks._gather = timed_gather  # type: ignore[assignment]
    try:
        for _ in range(repeats + 1):  # the first run warms the pool, the caches and the plans
            with connection.transaction() as conn:
                run = runs.insert(conn, source_id=source.id, kb_id=kb.id, collection_name=collection,
                                  connector="memory", sync_mode="new_only", trigger="manual", started_by="capacity")
            started = time.perf_counter()
            listed = tasks.run_task(ctx, {"task": "list", "run_id": str(run.id)})
            listed_s = time.perf_counter() - started
            gathered.clear()
            per_batch = []
            for item in listed["batches"]:
                started = time.perf_counter()
                done = tasks.run_task(ctx, {"task": "batch", **item})
                per_batch.append(time.perf_counter() - started)
                assert done.get("fetched", 0) == 0, done
            tasks.run_task(ctx, {"task": "finish", "run_id": str(run.id)})
            with connection.transaction() as conn:
                outcomes = conn.execute("SELECT outcome, count(*) AS n FROM sync_log_files WHERE run_id = %s"
                                        " GROUP BY outcome", (run.id,)).fetchall()
            assert {r["outcome"]: r["n"] for r in outcomes} == {"unchanged": objects}, outcomes
            out["list"].append(listed_s)
            out["batches"].append(sum(per_batch))
            out["gather"].append(sum(gathered))
            out["per_batch"] += per_batch
    finally:
        tasks._gather = real_gather  # type: ignore[assignment]
        connection.close_pool()
    for key in ("list", "batches", "gather"):
        out[key] = out[key][1:]
    out["per_batch"] = out["per_batch"][len(listed["batches"]):]
    out["batch_files"] = [float(settings.sync_batch_files)]
    return out


def teardown_object_times(objects: int, repeats: int) -> dict[str, list[float]]:
    """The ``objects`` step's work for ``objects`` stored objects against moto's S3, in process: the
    listing of each deleted document's places (``steps.objects_of``) and the DeleteObjects calls
    (``steps._delete``, ``ObjectStore.delete_many``: 1,000 keys a call). Seconds per repeat."""
    import os
    from types import SimpleNamespace

    import boto3
    from moto import mock_aws

    from sluice.db.teardowns import GoneDocument
    from sluice.storage import ObjectStore, content_key
    from sluice.teardown import steps

    for name, value in (("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_ACCESS_KEY_ID", "testing"),
                        ("AWS_SECRET_ACCESS_KEY", "testing")):
        os.environ.setdefault(name, value)
    out: dict[str, list[float]] = {"list": [], "delete": [], "calls": [], "listings": []}
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        key_id = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["KeyId"]
        s3.create_bucket(Bucket="capacity")
        store = ObjectStore(s3, "capacity", key_id)
        ctx = SimpleNamespace(store=store)
        calls = 0
        real = store._delete_objects

        def counted(batch: list[dict[str, str]]) -> list[str]:
            nonlocal calls
            calls += 1
            return real(batch)

        store._delete_objects = counted  # type: ignore[method-assign]
        listings = 0
        real_listed = store.listed

        def listed_counted(prefix: str) -> dict[str, int]:
            nonlocal listings
            listings += 1
            return real_listed(prefix)

        store.listed = listed_counted  # type: ignore[method-assign]
        for _ in range(repeats):
            # A done document leaves four objects: the original, its text, its parsed and chunked stages.
            docs = []
            for _n in range(objects // 4):
                doc_id = uuid.uuid4()
                original = f"rag/capacity/{uuid.uuid4()}_report.pdf"
                for key in (original, content_key(doc_id), f"stage/parsed/{doc_id}.json",
                            f"stage/chunks/{doc_id}.json"):
                    s3.put_object(Bucket="capacity", Key=key, Body=b"x" * 64)
                docs.append(GoneDocument(doc_id, None, None, original, "upload", "done", 1))
            calls, listings, listing, deleting = 0, 0, 0.0, 0.0
            found: dict[str, int] = {}
            for n in range(0, len(docs), steps.DOCUMENTS_PER_BATCH):  # the step's batches, as remove_objects runs
                started = time.perf_counter()
                batch = steps.objects_of(ctx, docs[n : n + steps.DOCUMENTS_PER_BATCH])  # type: ignore[arg-type]
                listed = time.perf_counter()
                steps._delete(ctx, batch)  # type: ignore[arg-type]
                listing, deleting = listing + listed - started, deleting + time.perf_counter() - listed
                found.update(batch)
            assert len(found) == objects and not s3.list_objects_v2(Bucket="capacity").get("Contents"), len(found)
            out["list"].append(listing)
            out["delete"].append(deleting)
            out["calls"].append(float(calls))
            out["listings"].append(float(listings))
    return out


def search_rows() -> list[list[object]]:
    """The search rows, from the last ``search_latency.py --with-writes`` run (bench/out/search_latency.json):
    a 100k table's build is minutes of HNSW, too long for this command, so it is cited with its date."""
    path = OUT / "search_latency.json"
    earlier_1m = ["search per query, 1M chunks, idle", "99-194 ms", "145-506 ms", "", "taken from",
                  "search_latency.py --rows 1000000, 2026-12-01 (Sluice, by selectivity; not re-measured)"]
    missing = ["search per query, 100k chunks, idle / with writes", "", "", "", "not run",
               "nice -n 10 .venv/bin/python bench/search_latency.py --sluice-only --with-writes"]
    if not path.is_file():
        return [missing, earlier_1m]
    run = json.loads(path.read_text())
    by = {(r["system"], r["filter"]): r["ms"] for r in run["results"]}
    load = "/".join(f"{x:.1f}" for x in run.get("load_average", []))
    rows = []
    for label, suffix in (("idle", ""), ("while a writer COPYs 1,000 chunks a transaction", " + writes")):
        for system in ("text", "vector"):
            tail = re.escape((" + text" if system == "text" else "") + suffix)
            key = next((k for k in by if k[1] == "none (100%)" and re.fullmatch(rf"Sluice \((vector|halfvec)\){tail}",
                                                                                 k[0])), None)
            if key is None:
                continue
            others = [statistics.median(v) for (s, f), v in by.items() if s == key[0] and f != key[1]]
            writer = run["costs"].get("writer rows/s") if suffix else None
            how = f"search_latency.py {run['measured']}, load {load}, unfiltered"
            if others:
                how += f"; p50 {min(others):.0f}-{max(others):.0f} ms at 50/5/0.5%"
            if writer:
                how += f"; writer {writer:,.0f} rows/s"
            rows.append([f"search per query, {run['rows'] // 1000:,}k chunks, {label}, "
                         f"{'vector + text (as the service)' if system == 'text' else 'vector side only'}",
                         *(f"{x:.1f} ms" for x in spread(by[key])), f"{len(by[key])} queries", how])
    return (rows or [missing]) + [earlier_1m, ["search per query, 1M chunks, with writes", "", "", "", "not measured",
                                               "a 1M build is 700-1,200 s of HNSW alone here"]]


def lambda_sizes() -> list[list[object]]:
    from sluice.local.template import load

    doc = load(ROOT / "template.yaml")
    default = doc["Globals"]["Function"]["MemorySize"]
    rows = []
    for name, res in doc["Resources"].items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        mb = int(res["Properties"].get("MemorySize", default))
        rows.append([name, mb, f"{mb / MB_PER_VCPU:.2f}", f"{max(1.0, MB_PER_VCPU / mb):.2f}"])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    per_format, repeats = (2, 3) if args.quick else (4, 5)

    # In a child of its own: the readers leave out optional imports the way the parse child does
    # (numpy among them), which the embedder in this process needs.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        by_format, texts = pool.submit(parse_times, per_format).result()
    rows, all_docs = [], []
    for ext, figures in sorted(by_format.items()):
        per_mb = [s / max(1e-6, b / 1e6) for s, b, _ in figures]
        docs = [s for s, _, _ in figures]
        all_docs += figures
        rows.append(
            [
                ext,
                len(figures),
                *(f"{x * 1000:.1f}" for x in spread(docs)),
                f"{statistics.median(per_mb):.3f}",
                f"{statistics.median([c for *_, c in figures]):,.0f}",
            ]
        )
    print_table(
        "Parse, in process as the parse child reads (ms per document; s per MB)",
        ["format", "files", "p50 ms", "p95 ms", "max ms", "s/MB p50", "chars p50"],
        rows,
    )

    if not texts:
        texts = ["Sluice capacity probe text. " * 400]
    chunk_s, chunks = chunk_times(texts, repeats)
    embed = embed_times(chunks, batches=4 if args.quick else 10, batch=64)
    url, server = migrated_database(args.database_url, "capacity")
    try:
        copy_s, txn_s, delete_s = store_times(url, chunks, repeats)
        sync = sync_decide_times(url, 1000, 3 if args.quick else 10)
    finally:
        if server is not None:
            server.cleanup()

    objects = teardown_object_times(1000, 1 if args.quick else 3)
    search = search_rows()

    # The mean, not the median: the corpus holds many tiny files, and the work is in the characters.
    chars_per_doc = statistics.mean([c for *_, c in all_docs]) if all_docs else 2100.0
    chunks_per_doc = max(1.0, chars_per_doc / (100_000 / max(1, len(chunks))))
    table = [
        [
            "chunk, per 100,000 characters (default plan)",
            *(f"{x:.3f}" for x in spread(chunk_s)),
            f"{len(chunks)} chunks",
            "split_text, in process",
        ],
        *[
            [
                f"embed, per chunk, ONNX {name}, batches of 64",
                *(f"{x * 1000:.2f} ms" for x in spread(v)),
                f"{len(v)} batches",
                "encode() on a warm model, this process's threads",
            ]
            for name, v in embed.items()
        ],
        [
            "store, per 1,000 chunks (COPY + replace, in the transaction)",
            *(f"{x:.3f}" for x in spread(copy_s)),
            f"{len(copy_s)} commits",
            "replace_document_chunks, HNSW+GIN+btree+hash, stats triggers",
        ],
        ["store, per 1,000 chunks with the commit", *(f"{x:.3f}" for x in spread(txn_s)), "", ""],
        [
            "teardown, per 10,000 chunks (1,000 a batch)",
            *(f"{x:.3f}" for x in spread(delete_s)),
            "",
            "delete_chunks_of",
        ],
        *search,
        [
            "teardown, per 1,000 objects: list each document's places",
            *(f"{x:.2f}" for x in spread(objects["list"])),
            f"{len(objects['list'])} x {objects['listings'][0]:.0f} listings",
            "steps.objects_of (ListObjectsV2, 8 threads) against moto in process: moto's CPU, not S3's latency",
        ],
        [
            "teardown, per 1,000 objects: DeleteObjects",
            *(f"{x:.3f}" for x in spread(objects["delete"])),
            f"{len(objects['delete'])} x {objects['calls'][0]:.0f} calls",
            "steps._delete (delete_many) against moto: Sluice's own CPU per batch (and moto's), not S3's latency",
        ],
        [
            "teardown, per 1,000 objects, on S3 (documented)",
            "1 DeleteObjects call",
            "",
            "",
            "",
            "AWS S3 API DeleteObjects: up to 1,000 keys a request; 3,500 DELETE/s per prefix (not measured here)",
        ],
        [
            f"sync decide, per 1,000 unchanged objects ({len(sync['per_batch']) // max(1, len(sync['batches']))}"
            f" batch tasks of {sync['batch_files'][0]:.0f})",
            *(f"{x:.3f}" for x in spread(sync["batches"])),
            f"{len(sync['batches'])} runs",
            "tasks.process_batch over every batch: lookups, decide_before, claims confirmed, outcomes recorded",
        ],
        [
            "  of which the indexed lookups (_gather)",
            *(f"{x:.3f}" for x in spread(sync["gather"])),
            f"{len(sync['gather'])} runs",
            "claims_at, by_addresses, unaddressed_by_names; 1,000 done documents + claims in place",
        ],
        [
            "  per batch task (one Map iteration)",
            *(f"{x * 1000:.1f} ms" for x in spread(sync["per_batch"])),
            f"{len(sync['per_batch'])} tasks",
            "one Lambda invocation of the sync function each on AWS",
        ],
        [
            "sync list step, per 1,000 objects (the run's file rows)",
            *(f"{x:.3f}" for x in spread(sync["list"])),
            f"{len(sync['list'])} runs",
            "tasks.list_files, listing served from memory (the remote's listing call not included)",
        ],
    ]
    print_table(
        "Service time per unit of work (seconds unless marked; p50 / p95 / max)",
        ["stage", "p50", "p95", "max", "n", "how"],
        table,
    )
    print_table(
        "Lambda memory (template.yaml) and the CPU share it gives (1 vCPU at 1,769 MB)",
        ["function", "MB", "vCPU", "x one core's time, single-threaded"],
        lambda_sizes(),
    )

    fp32 = statistics.median(embed["fp32"])
    service = {
        "parse_s_per_doc": statistics.mean([s for s, *_ in all_docs]) if all_docs else 0.142,
        "chunk_s_per_doc": statistics.median(chunk_s) * chars_per_doc / 100_000,
        "embed_s_per_chunk": fp32,
        "store_s_per_doc": statistics.median(txn_s) / 1000 * chunks_per_doc + 0.005,
        "chunks_per_doc": chunks_per_doc,
        "chars_per_doc": chars_per_doc,
        # the Map's batch tasks over 1,000 unchanged files, each task's own overhead included
        "sync_decide_s_per_1000": statistics.median(sync["batches"]),
    }
    idle = next((r for r in search if "idle, vector + text" in str(r[0])), None)
    if idle is not None:
        service["search_s"] = float(str(idle[1]).removesuffix(" ms")) / 1000  # p50, as simulate's default
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "capacity.json").write_text(
        json.dumps(
            {
                "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "service_times": service,
                "parse_by_format": {k: v for k, v in by_format.items()},
                "embed": embed,
                "chunk_s": chunk_s,
                "copy_s": copy_s,
                "txn_s": txn_s,
                "delete_s": delete_s,
                "sync_decide_per_1000": sync,
                "teardown_objects_per_1000": objects,
            },
            indent=1,
        )
    )
    print_table(
        "What bench/simulate.py reads (bench/out/capacity.json)",
        ["figure", "value"],
        [[k, f"{v:.4f}"] for k, v in service.items()],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
