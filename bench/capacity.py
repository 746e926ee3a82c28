"""Service time of each stage, per unit of work, with spread (issue 30), and the Lambda sizes they run at.

    nice -n 10 .venv/bin/python bench/capacity.py            # ~3 min on the shared machine
    nice -n 10 .venv/bin/python bench/capacity.py --quick    # fewer files and repeats (~1 min)

Measured here, in this process, one core's worth (the parse child and the model's threads as the
stages run them): parse per format and per MB (the real corpus, up to N files a format, in process
the way the parse child reads), chunk per 100,000 characters (the default plan), embed per chunk
(the bundled all-MiniLM-L6-v2, ONNX fp32; int8 when an export can be built), store per 1,000 chunks
(one binary COPY into a collection table made by ``vectors.store.ensure_table``: HNSW, GIN, btree and
hash indexes and the lexical-statistics triggers), teardown per 10,000 chunks (``delete_chunks_of``,
1,000 a batch). What is taken from earlier runs instead (search at 100k / 1M chunks, idle and while
documents ingest; sync decide) is printed with where it comes from. The figures go to
bench/out/capacity.json, which bench/simulate.py reads.

Lambda gives CPU in proportion to memory, one vCPU at 1,769 MB (docs.aws.amazon.com/lambda/latest/dg/
configuration-memory.html, looked up 2026-12-02). Assumption: one core of this machine is one Lambda
vCPU; not verified on AWS (both are x86 server cores of a few GHz; Lambda's may be older).
"""

from __future__ import annotations

import argparse
import json
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
    finally:
        if server is not None:
            server.cleanup()

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
        [
            "search per query, 100k chunks, p50/p95",
            "27-44 ms",
            "40-130 ms",
            "",
            "taken from",
            "search_latency.py 2026-12-01",
        ],
        [
            "search per query, 1M chunks, p50/p95",
            "99-194 ms",
            "145-506 ms",
            "",
            "taken from",
            "search_latency.py 2026-12-01",
        ],
        [
            "search p95 while documents ingest (local, 2 cores)",
            "",
            "",
            "",
            "taken from",
            "load.py (issue 13 target 300 ms)",
        ],
        ["teardown, per 1,000 objects", "one DeleteObjects call", "", "", "not measured", "S3 latency, not CPU"],
        ["sync decide, per 1,000 unchanged objects", "", "", "", "not measured here", "bench/sync.py measures a run"],
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
    }
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
