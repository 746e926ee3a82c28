"""Ingestion throughput, end to end, and the store stage against langchain-postgres and
llama-index-vector-stores-postgres (issue 5).

    .venv/bin/python bench/ingest.py            # >= 200 real documents, then 100,000 vectors

Part 1 starts the local runtime (embedded PostgreSQL, moto, the pumps and the gateway,
as `sluice local up` does), uploads real documents over HTTP and waits until the base
reports ``complete``: documents/min, chunks/s, and the handler time split by stage. It
does so once per embedding path (``--paths``): the torch path the local provider used
before issue 12 (sentence-transformers) and the ONNX model it serves now, in the same
run; then the embedder alone on the same chunks, every batch to each path in turn.
Part 2 writes the same precomputed 384-d vectors with their text into the same embedded
PostgreSQL three ways: Sluice's store path (binary COPY, and the executemany of 200-row
batches R-VEC-3 also allows), langchain-postgres ``PGVector.add_embeddings`` and
llama-index ``PGVectorStore.add``; rows/s and the ratio to the faster of the two.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus" / "real"
SCIFACT = SHARED / "bench" / "retrieval" / "scifact" / "corpus.jsonl"
DIM = 384

from harness import TorchMiniLM, embedder_throughput, exported, scifact_chunks, serving  # noqa: E402
from harness import print_table as table  # noqa: E402

# --- corpus ------------------------------------------------------------------------------------

def scifact_documents(n: int) -> list[tuple[str, bytes]]:
    out = []
    with SCIFACT.open() as f:
        for i, line in enumerate(f):
            if len(out) == n:
                break
            doc = json.loads(line)
            if i % 2:
                out.append((f"scifact_{doc['_id']}.md", f"# {doc['title']}\n\n{doc['text']}\n".encode()))
            else:
                out.append((f"scifact_{doc['_id']}.txt", f"{doc['title']}\n\n{doc['text']}\n".encode()))
    return out


def real_documents(n: int, max_bytes: int = 300_000) -> list[tuple[str, bytes]]:
    """Files of the real corpus that its manifest expects to parse to text, small enough for a Lambda upload."""
    out = []
    for line in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:]:
        cols = line.split("\t")
        path, expectation = cols[0], cols[5]
        if expectation != "parse_text" or path.split("/")[0] in ("zip", "targz", "other", "malicious"):
            continue
        data = (CORPUS / path).read_bytes()
        if 0 < len(data) <= max_bytes:
            out.append((Path(path).name, data))
        if len(out) == n:
            break
    return out


# --- part 1: end to end ------------------------------------------------------------------------

class StageClock:
    """Handler seconds per stage, summed over documents (the runtime runs one event per function at a time)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()

    def wrap(self, module, name: str, stage: str) -> None:
        inner = getattr(module, name)

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                with self._lock:
                    self.seconds[stage] += time.perf_counter() - started

        setattr(module, name, timed)


def stage_clock() -> StageClock:
    from sluice.ingest import chunk, embed, parse

    clock = StageClock()
    # The parse stage's work includes reading the object and the isolated extract; the embed
    # stage's two halves are the provider calls and the transaction that stores.
    clock.wrap(parse, "_parse", "parse")
    clock.wrap(chunk, "_chunk", "chunk")
    clock.wrap(embed, "_embed_with_progress", "embed")
    clock.wrap(embed, "store_chunks", "store")
    return clock


def end_to_end(docs: list[tuple[str, bytes]], data_dir: Path, clock: StageClock) -> tuple[str, dict]:
    import httpx

    from sluice.config import get_settings
    from sluice.local.runtime import LocalRuntime
    from sluice.local.tokens import mint

    clock.seconds.clear()
    rt = LocalRuntime(data_dir=data_dir, api_port=0).start()
    # An organization's base: the private-pool caps and upload rate limits (R-ACC-5) are not what is measured.
    token = mint(get_settings().dev_jwt_secret, user="bench", org="bench-org", permissions=["collections:edit"],
                 app_admin=False)
    api = httpx.Client(base_url=rt.api_url, timeout=300, headers={"Authorization": f"Bearer {token}"})
    try:
        # Load the embedding model before the clock starts: a warm Lambda has it loaded.
        warm = api.post("/kb", json={"name": "warm-up", "scope": "org"}).json()
        api.post(f"/kb/{warm['id']}/documents", files={"file": ("w.txt", b"warm up the embedder")})
        rt.wait_idle(timeout=300)
        clock.seconds.clear()

        kb = api.post("/kb", json={"name": "bench", "scope": "org"}).json()
        started = time.perf_counter()
        for name, data in docs:
            resp = api.post(f"/kb/{kb['id']}/documents", files={"file": (name, data)})
            assert resp.status_code == 202, resp.text
        uploaded = time.perf_counter() - started
        while True:
            status = api.get(f"/kb/{kb['id']}/ingestion").json()
            if status["indexing_status"] == "complete" and status["document_count"] == len(docs):
                break
            time.sleep(0.5)
        elapsed = time.perf_counter() - started
        failed = []
        for offset in range(0, len(docs), 200):
            page = api.get(f"/kb/{kb['id']}/documents", params={"limit": 200, "offset": offset}).json()
            failed += [(d["filename"], d["error_message"]) for d in page["documents"] if d["status"] == "error"]
    except BaseException:
        rt.stop()
        raise
    finally:
        api.close()
    summary = {"status": status, "elapsed": elapsed, "uploaded": uploaded, "stages": dict(clock.seconds),
               "failed": failed}
    return rt.database_url or "", {"runtime": rt, **summary}


# --- part 2: the store stage alone ---------------------------------------------------------------

def corpus_texts(n: int) -> list[str]:
    texts: list[str] = []
    with SCIFACT.open() as f:
        abstracts = [json.loads(line)["text"] for line in f]
    i = 0
    while len(texts) < n:
        a = abstracts[i % len(abstracts)]
        texts.extend(a[j:j + 600] for j in range(0, len(a), 600) if a[j:j + 600].strip())
        i += 1
    return texts[:n]


def store_comparison(url: str, rows: int, batch: int, with_hnsw: bool) -> list[list[object]]:
    """All four writers take each batch in turn, in a rotating order, so a checkpoint, a warming cache or a
    neighbour's load falls on each of them alike; each is timed around its own store call only."""
    import numpy as np
    import psycopg
    from langchain_core.embeddings import Embeddings
    from langchain_postgres import PGVector
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.postgres import PGVectorStore
    from pgvector.psycopg import register_vector
    from psycopg.rows import dict_row

    from sluice.vectors import store

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((rows, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = corpus_texts(rows)
    batches = [(i, min(i + batch, rows)) for i in range(0, rows, batch)]
    kb = uuid.uuid4()

    conn = psycopg.connect(url, row_factory=dict_row)
    register_vector(conn)
    for name in ("copy", "executemany"):
        store.drop_table(conn, f"bench_{name}")
        store.ensure_table(conn, f"bench_{name}", DIM)
        if not with_hnsw:
            conn.execute(f"DROP INDEX rag_bench_{name}_embedding_idx")
    conn.commit()

    class Precomputed(Embeddings):
        def embed_documents(self, texts):  # never called: add_embeddings takes the vectors
            raise AssertionError

        def embed_query(self, text):
            raise AssertionError

    lc = PGVector(embeddings=Precomputed(), collection_name="bench_langchain",
                  connection=url.replace("postgresql://", "postgresql+psycopg://", 1),
                  use_jsonb=True, pre_delete_collection=True, embedding_length=DIM)
    li = PGVectorStore.from_params(
        connection_string=url.replace("postgresql://", "postgresql+psycopg2://", 1),
        async_connection_string=url.replace("postgresql://", "postgresql+asyncpg://", 1),
        table_name="bench_llamaindex", embed_dim=DIM,
        hnsw_kwargs={"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": 40,
                     "hnsw_dist_method": "vector_cosine_ops"} if with_hnsw else None,
    )
    if with_hnsw:
        conn.execute("CREATE INDEX IF NOT EXISTS bench_lc_hnsw ON langchain_pg_embedding "
                     "USING hnsw ((embedding::vector(384)) vector_cosine_ops)")
        conn.commit()

    def chunk_rows_for(lo: int, hi: int) -> tuple[uuid.UUID, list[store.ChunkRow]]:
        doc = uuid.uuid4()
        return doc, [
            store.ChunkRow(document_id=doc, kb_id=kb, org_id="org", chunk_index=i - lo, content=texts[i],
                           embedding=vectors[i], source="upload", filename=f"doc{lo}.txt", content_hash="0" * 64,
                           metadata={"mime": "text/plain"})
            for i in range(lo, hi)
        ]

    def sluice_copy(lo: int, hi: int) -> float:
        # The embed stage's write: binary COPY, then the document's older chunks deleted.
        doc, chunk_rows = chunk_rows_for(lo, hi)
        t = time.perf_counter()
        store.replace_document_chunks(conn, "bench_copy", doc, chunk_rows)
        conn.commit()
        return time.perf_counter() - t

    def sluice_executemany200(lo: int, hi: int) -> float:
        _, chunk_rows = chunk_rows_for(lo, hi)
        t = time.perf_counter()
        store.insert_chunks_batched(conn, "bench_executemany", chunk_rows)
        conn.commit()
        return time.perf_counter() - t

    def langchain_postgres(lo: int, hi: int) -> float:
        embeddings = vectors[lo:hi].tolist()
        metadatas = [{"filename": f"doc{lo}.txt", "chunk_index": i - lo} for i in range(lo, hi)]
        t = time.perf_counter()
        lc.add_embeddings(texts=texts[lo:hi], embeddings=embeddings, metadatas=metadatas)
        return time.perf_counter() - t

    def llama_index_postgres(lo: int, hi: int) -> float:
        nodes = [TextNode(text=texts[i], embedding=vectors[i].tolist(),
                          metadata={"filename": f"doc{lo}.txt", "chunk_index": i - lo}) for i in range(lo, hi)]
        t = time.perf_counter()
        li.add(nodes)
        return time.perf_counter() - t

    writers = [sluice_copy, sluice_executemany200, langchain_postgres, llama_index_postgres]
    spent = {w.__name__: 0.0 for w in writers}
    try:
        for n, (lo, hi) in enumerate(batches):
            for w in writers[n % 4:] + writers[:n % 4]:
                spent[w.__name__] += w(lo, hi)
        assert store.count_chunks(conn, "bench_copy") == store.count_chunks(conn, "bench_executemany") == rows
    finally:
        for name in ("copy", "executemany"):
            store.drop_table(conn, f"bench_{name}")
        conn.execute("DROP TABLE IF EXISTS data_bench_llamaindex")
        conn.commit()
        conn.close()
        lc.delete_collection()

    faster = min(spent["langchain_postgres"], spent["llama_index_postgres"])
    return [[name, rows, round(s, 2), rows / s, faster / s] for name, s in spent.items()]


# --- the embedding paths ------------------------------------------------------------------------

def embedding_path(path: str, models: Path):
    if path == "torch":
        return TorchMiniLM()
    if path == "onnx":
        from sluice.embedding.local import MINILM, local_model

        return local_model(MINILM)
    if path in ("onnx-fp32", "onnx-int8"):
        return exported(path.removeprefix("onnx-"), models)
    raise SystemExit(f"unknown embedding path {path!r}")


def report_end_to_end(results: dict[str, dict], docs: list, scifact: int) -> None:
    rows = []
    for path, e2e in results.items():
        s = e2e["status"]
        embed_s = e2e["stages"].get("embed", 0.0)
        rows.append([
            f"{path} ({getattr(e2e.get('encoder'), 'precision', '')})".replace(" ()", ""),
            f"{s['indexed_count']} / {s['failed_count']}", s["chunk_count"], round(e2e["elapsed"], 1),
            s["document_count"] / e2e["elapsed"] * 60, s["chunk_count"] / e2e["elapsed"], round(embed_s, 1),
            s["chunk_count"] / embed_s if embed_s else 0.0, f"{e2e['load'][0]:.1f} / {e2e['load'][1]:.1f}",
        ])
    table(
        f"End to end through the local runtime, per embedding path ({len(docs)} documents: {scifact} scifact "
        f"abstracts, {len(docs) - scifact} real files; all-MiniLM-L6-v2 on CPU)",
        ["path", "indexed / failed", "chunks", "wall s", "documents/min", "chunks/s", "embed stage s",
         "embed-stage chunks/s", "load avg start / end"], rows,
    )
    if "torch" in results:
        base = results["torch"]
        for path, e2e in results.items():
            if path == "torch":
                continue
            wall = base["elapsed"] / e2e["elapsed"]
            embed = base["stages"].get("embed", 0.0) / max(e2e["stages"].get("embed", 0.0), 1e-9)
            print(f"{path} vs torch: documents/min and chunks/s x{wall:.2f}; embed stage x{embed:.2f}")
    for path, e2e in results.items():
        if e2e["failed"]:
            table(f"Documents that failed on {path} (their row's summary)", ["file", "error_message"],
                  [[name, (message or "")[:110]] for name, message in e2e["failed"]])
    stages = ("parse", "chunk", "embed", "store")
    def cell(seconds: dict[str, float], stage: str) -> str:
        spent = seconds.get(stage, 0.0)
        return f"{spent:.1f} ({100 * spent / (sum(seconds.values()) or 1):.0f})"

    table("Handler time by stage, seconds summed over documents (share %)", ["stage", *results],
          [[k, *[cell(e["stages"], k) for e in results.values()]] for k in stages])


def report_embedder_alone(encoders: dict[str, object], n: int) -> None:
    import statistics

    from sluice.config import get_settings

    batch = get_settings().embed_batch_size
    chunks = scifact_chunks(SCIFACT, n)
    rates = embedder_throughput(encoders, chunks, batch)
    base = statistics.median(rates["torch"]) if "torch" in rates else None
    table(
        f"The embedder alone: {len(chunks)} scifact chunks of the default plan ({sum(map(len, chunks)) // len(chunks)} "
        f"characters on average), {batch} a call, each batch to every path in a rotating order",
        ["path", "precision", "median chunks/s", "min", "max", "x torch"],
        [[name, getattr(encoders[name], "precision", ""), statistics.median(r), min(r), max(r),
          f"{statistics.median(r) / base:.2f}" if base else "-"] for name, r in rates.items()],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scifact", type=int, default=200, help="scifact abstracts uploaded as .txt/.md")
    parser.add_argument("--real", type=int, default=40, help="files of the real corpus (pdf, docx, xlsx, ...)")
    parser.add_argument("--rows", type=int, default=100_000,
                        help="vectors written in the store comparison (0 skips it)")
    parser.add_argument("--batch", type=int, default=1000, help="rows per store call (a document's chunks)")
    parser.add_argument("--skip-e2e", action="store_true")
    parser.add_argument("--paths", default="torch,onnx",
                        help="embedding paths end to end, in this order: torch (sentence-transformers), onnx (the "
                             "installed export), onnx-fp32 / onnx-int8 (fresh exports)")
    parser.add_argument("--embed-paths", default="torch,onnx,onnx-int8",
                        help="embedding paths compared alone on the same chunks")
    parser.add_argument("--embed-chunks", type=int, default=640,
                        help="scifact chunks for the embedder-alone comparison (0 skips it)")
    parser.add_argument("--hnsw", action="store_true",
                        help="also compare with an HNSW index on every table (slow: index maintenance dominates)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    with tempfile.TemporaryDirectory(prefix="sluice-bench-") as tmp:
        docs = scifact_documents(args.scifact) + real_documents(args.real)
        url = ""
        runtime = None
        encoders: dict[str, object] = {}

        def encoder(path: str):
            if path not in encoders:
                encoders[path] = embedding_path(path, Path(tmp) / "models")
            return encoders[path]

        if not args.skip_e2e:
            clock = stage_clock()
            paths = [p.strip() for p in args.paths.split(",") if p.strip()]
            results: dict[str, dict] = {}
            for n, path in enumerate(paths):
                load_before = os.getloadavg()[0]
                with serving(encoder(path)):
                    url, e2e = end_to_end(docs, Path(tmp) / path, clock)
                e2e["load"] = (load_before, os.getloadavg()[0])
                e2e["encoder"] = encoder(path)
                results[path] = e2e
                if n < len(paths) - 1:
                    e2e["runtime"].stop()
            runtime = results[paths[-1]]["runtime"]
            report_end_to_end(results, docs, args.scifact)
        else:
            import pgserver

            runtime = pgserver.get_server(Path(tmp) / "pg", cleanup_mode="stop")
            url = runtime.get_uri()
            from sluice.db.migrations import migrate

            migrate(url)
        try:
            if args.embed_chunks:
                embed_paths = [p.strip() for p in args.embed_paths.split(",") if p.strip()]
                report_embedder_alone({p: encoder(p) for p in embed_paths}, args.embed_chunks)
            for hnsw in ([False, True] if args.hnsw else [False]) if args.rows else []:
                rows = store_comparison(url, args.rows, args.batch, with_hnsw=hnsw)
                table(
                    f"Store stage alone: {args.rows:,} precomputed {DIM}-d vectors with text, {args.batch} rows a "
                    f"call, same embedded PostgreSQL ({'HNSW index on every table' if hnsw else 'no ANN index'})",
                    ["writer", "rows", "seconds", "rows/s", "x faster of the two"], rows,
                )
        finally:
            if hasattr(runtime, "stop"):
                runtime.stop()
            elif runtime is not None:
                runtime.cleanup()


if __name__ == "__main__":
    main()
