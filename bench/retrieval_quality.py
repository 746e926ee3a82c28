"""Retrieval quality on SciFact (BEIR test split): vector-only, hybrid, and Postgres full-text alone.

    .venv/bin/python bench/retrieval_quality.py            # ~6 min the first time (encoding), seconds after

Every SciFact document (title + abstract) is one chunk, embedded with the
default embedder (local all-MiniLM-L6-v2, 384-d, through ``build_embedder``)
and written with the store's COPY into a runtime table of an embedded
PostgreSQL. Each of the 300 test queries then runs through
``sluice.vectors.search.vector_candidates`` (the service's own query):

* vector-only: the candidates in cosine order;
* hybrid: the same candidates in the spec's weighted order
  ``vec_score * 0.7 + text_score * 10 * 0.3`` (R-SRCH-1), with a pool of 100
  (to rank a full top 100) and with a pool of 10 (the reordering of exactly
  the vector top 10, which is what nDCG@10 sees of a short pool);
* full-text alone: ``ts_rank`` of the same OR'ed ``plainto_tsquery('simple')``
  over the whole table (not only the candidates).

Scores follow trec_eval: binary gains, log2 discount, every query counted
(an empty answer scores 0). Reference figures are SciFact's SOURCE.md and
DESIGN.md's exact whole-document all-MiniLM run. Then a few variants of the
text side are measured *beside* the spec's formula, to explain what the
full-text term does on this corpus; the service keeps the spec's formula.

The embedder is measured three ways in the same run (``--paths``): the torch path the
local provider used before issue 12 (sentence-transformers), and the ONNX exports it
serves now, fp32 and int8, each exported fresh from the bundled weights. Each path gets
its own table and the vector-only and hybrid rankings; the main table is the fp32 export.

Embeddings are cached in .sluice/bench/ keyed by the path (torch, or the ONNX file's
checksum) and the corpus checksum.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "bench" / "retrieval" / "scifact"
CACHE = ROOT / ".sluice" / "bench"

from functools import partial  # noqa: E402

from harness import TorchMiniLM, exported, migrated_database, model_digest, print_table  # noqa: E402

table = partial(print_table, number_format="{:.4f}")

import numpy as np  # noqa: E402

REFERENCES = [
    ("BM25 flat (Anserini), SOURCE.md", 0.6789, 0.9253),
    ("BM25 multifield (Anserini), SOURCE.md", 0.6647, 0.9076),
    ("BM25 bm25s sanity run, SOURCE.md", 0.6762, 0.9127),
    ("Contriever (unsupervised), SOURCE.md", 0.6493, 0.9260),
    ("BGE-base-en-v1.5, SOURCE.md", 0.7408, 0.9667),
    ("all-MiniLM-L6-v2 exact, whole docs (DESIGN.md)", 0.6451, 0.9250),
]


# --- data and metrics --------------------------------------------------------------------------

def load() -> tuple[list[dict], list[dict], dict[str, set[str]]]:
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    queries = [json.loads(line) for line in (DATA / "queries.jsonl").open()]
    qrels: dict[str, set[str]] = {}
    for i, line in enumerate((DATA / "qrels.tsv").open()):
        if i == 0:
            continue
        qid, did, score = line.rstrip("\n").split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, set()).add(did)
    return corpus, queries, qrels


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: Sequence[str], relevant: set[str], k: int = 100) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def evaluate(run: dict[str, list[str]], queries: list[dict], qrels: dict[str, set[str]]) -> tuple[float, float]:
    ids = [q["_id"] for q in queries if q["_id"] in qrels]
    ndcg = float(np.mean([ndcg_at(run.get(q, []), qrels[q]) for q in ids]))
    rec = float(np.mean([recall_at(run.get(q, []), qrels[q]) for q in ids]))
    return ndcg, rec


# --- embedding (cached) ------------------------------------------------------------------------

def embed(texts: list[str], kind: str, encoder, path: str) -> tuple[np.ndarray, float | None]:
    """The vectors, and chunks/s if they were encoded in this run (None from the cache)."""
    from sluice.embedding import EmbeddingSpec, find_model
    from sluice.embedding.local import LocalEmbedder

    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    cache = CACHE / f"scifact_{kind}_minilm_{path}_{model_digest(encoder)}_{digest}.npy"
    if cache.exists():
        return np.load(cache), None
    # Through the provider class the service uses, serving this path's encoder.
    embedder = LocalEmbedder(EmbeddingSpec("local", "all-MiniLM-L6-v2", 384),
                             find_model("local", "all-MiniLM-L6-v2"), model=encoder)
    started = time.perf_counter()
    vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    seconds = time.perf_counter() - started
    print(f"{path}: encoded {len(texts)} {kind} in {seconds:.0f} s", flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return vectors, len(texts) / seconds


# --- database ----------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None, help="default: a throwaway embedded PostgreSQL")
    parser.add_argument("--paths", default="torch,onnx-fp32,onnx-int8",
                        help="embedding paths to compare, comma-separated; the first ONNX one is the main table's")
    args = parser.parse_args()
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    main_path = next((p for p in paths if p.startswith("onnx")), paths[0])

    import psycopg
    from pgvector import Vector
    from pgvector.psycopg import register_vector
    from psycopg import sql

    from sluice.vectors import store
    from sluice.vectors.names import table_ident
    from sluice.vectors.search import BaseScope, vector_candidates

    corpus, queries, qrels = load()
    doc_texts = [f"{d['title']} {d['text']}".strip() for d in corpus]
    query_texts = [q["text"] for q in queries]
    vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    rates: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory(prefix="sluice-bench-models-") as models:
        for path in paths:
            encoder = TorchMiniLM() if path == "torch" else exported(path.removeprefix("onnx-"), Path(models))
            doc_vecs, rates[path] = embed(doc_texts, "docs", encoder, path)
            vectors[path] = (doc_vecs, embed(query_texts, "queries", encoder, path)[0])
            del encoder

    url, server = migrated_database(args.database_url, "bench_quality")
    kb = uuid.uuid4()
    scope = [BaseScope(kb, None)]
    by_path: dict[str, dict[str, dict[str, list[str]]]] = {}
    try:
        with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as conn:
            register_vector(conn)
            for path in paths:
                collection = "bench_scifact_" + path.replace("-", "_")
                doc_vecs, query_vecs = vectors[path]
                store.drop_table(conn, collection)
                store.ensure_table(conn, collection, 384)
                store.insert_chunks(conn, collection, [
                    store.ChunkRow(document_id=uuid.uuid5(uuid.NAMESPACE_URL, d["_id"]), kb_id=kb, org_id=None,
                                   chunk_index=0, content=text, embedding=vec, filename=d["_id"])
                    for d, text, vec in zip(corpus, doc_texts, doc_vecs, strict=True)])
                conn.execute(sql.SQL("ANALYZE {t}").format(t=table_ident(collection)))
                conn.commit()

                path_runs: dict[str, dict[str, list[str]]] = {n: {} for n in ("vector", "hybrid100", "hybrid10")}
                path_pools: dict[str, list] = {}
                started = time.perf_counter()
                for q, qv in zip(queries, query_vecs, strict=True):
                    found, _ = vector_candidates(conn, collection, vector=qv, text=q["text"], scope=scope, limit=100)
                    conn.rollback()
                    path_pools[q["_id"]] = found
                    path_runs["vector"][q["_id"]] = [c.filename for c in found]
                    path_runs["hybrid100"][q["_id"]] = [c.filename for c in sorted(found, key=lambda c: -c.hybrid)]
                    path_runs["hybrid10"][q["_id"]] = [c.filename
                                                       for c in sorted(found[:10], key=lambda c: -c.hybrid)]
                by_path[path] = path_runs
                if path == main_path:
                    per_query_ms = (time.perf_counter() - started) * 1000 / len(queries)
                    runs = {**path_runs, "fts": {}}
                    pools = path_pools
                    main_collection = collection
            collection = main_collection

            fts_sql = sql.SQL("""
                WITH q AS (SELECT replace(plainto_tsquery('simple', %(text)s)::text, '&', '|') AS terms)
                SELECT filename, ts_rank(content_tsv, q.terms::tsquery) AS r
                  FROM {t}, q WHERE q.terms <> '' AND content_tsv @@ q.terms::tsquery
                 ORDER BY r DESC, id LIMIT 100""").format(t=table_ident(collection))
            for q in queries:
                runs["fts"][q["_id"]] = [r["filename"] for r in conn.execute(fts_sql, {"text": q["text"]})]

            # Variants of the text side, measured beside the spec's formula to explain it (not adopted).
            variants = explore(conn, collection, queries, pools, Vector)
    finally:
        if server is not None:
            server.cleanup()

    torch_docs = vectors["torch"][0] if "torch" in vectors else None
    path_rows: list[list[object]] = []
    for path in paths:
        ndcg, rec = evaluate(by_path[path]["vector"], queries, qrels)
        hybrid = evaluate(by_path[path]["hybrid100"], queries, qrels)[0]
        if torch_docs is not None and path != "torch":
            agreement = np.sum(vectors[path][0] * torch_docs, axis=1)
            cos = f"{agreement.mean():.5f} / {agreement.min():.5f}"
        else:
            cos = "-"
        rate = rates[path]
        path_rows.append([path, ndcg, rec, hybrid, cos, "cached" if rate is None else f"{rate:.1f}"])
    table(f"Embedding paths, same run: vector-only (cosine, exact plan) and hybrid (pool 100); cosine to "
          f"torch over the {len(corpus)} documents (mean / worst)",
          ["path", "nDCG@10", "R@100", "hybrid nDCG@10", "cosine to torch", "docs/s encoding"], path_rows)
    if "torch" in by_path:
        base = evaluate(by_path["torch"]["vector"], queries, qrels)[0]
        for path in paths:
            if path != "torch":
                delta = evaluate(by_path[path]["vector"], queries, qrels)[0] - base
                print(f"{path} vs torch, vector-only nDCG@10: {delta:+.4f} (target: within 0.005)")

    scores = {name: evaluate(run, queries, qrels) for name, run in runs.items()}
    print(f"\nThe tables below use the {main_path} path.")
    rows: list[list[object]] = [
        ["Sluice vector-only (cosine, exact plan)", *scores["vector"]],
        ["Sluice hybrid, spec weights, pool 100", *scores["hybrid100"]],
        ["Sluice hybrid, spec weights, pool 10", scores["hybrid10"][0], "-"],
        ["Postgres full-text alone (simple, OR'ed)", *scores["fts"]],
    ]
    rows += [[f"reference: {name}", n, r] for name, n, r in REFERENCES]
    table(f"SciFact test, {len(queries)} queries, {len(corpus)} docs, one chunk per doc "
          f"(search path {per_query_ms:.1f} ms/query incl. full-text join)",
          ["system", "nDCG@10", "R@100"], rows)
    gain = scores["hybrid100"][0] - scores["vector"][0]
    print(f"\nhybrid vs vector-only nDCG@10: {gain:+.4f} ({gain / scores['vector'][0] * 100:+.1f}%); "
          f"R@100 is the same pool reordered: {scores['hybrid100'][1]:.4f} vs {scores['vector'][1]:.4f}")
    table("What the text term does (pool 100; variants are measurements, the service keeps the spec formula)",
          ["ordering", "nDCG@10", "R@100", "queries moved"], [[k, *v] for k, v in variants.items()])
    return 0


def explore(conn, collection: str, queries: list[dict], pools: dict[str, list], Vector) -> dict[str, list]:
    """Reorder the same 100 candidates with other text weights/ranks, to see what the text side contributes."""
    from psycopg import sql

    from sluice.vectors.names import table_ident
    from sluice.vectors.search import TEXT_SCALE

    _, _, qrels = load()
    # ts_rank with length normalisation (flag 1: divide by 1 + log(length)) and an English-stemmed query.
    extra = sql.SQL("""
        WITH q AS (SELECT replace(plainto_tsquery('simple', %(text)s)::text, '&', '|') AS s,
                          replace(plainto_tsquery('english', %(text)s)::text, '&', '|') AS e)
        SELECT filename,
               CASE WHEN q.s = '' THEN 0 ELSE ts_rank(content_tsv, q.s::tsquery, 1) END AS norm,
               CASE WHEN q.e = '' THEN 0
                    ELSE ts_rank(to_tsvector('english', content), q.e::tsquery) END AS english
          FROM {t}, q WHERE filename = ANY(%(ids)s)""").format(t=table_ident(collection))
    orders: dict[str, Callable] = {
        "spec: vec*0.7 + text*10*0.3": lambda c, x: c.vec_score * 0.7 + c.text_score * TEXT_SCALE * 0.3,
        "vec only": lambda c, x: c.vec_score,
        "vec*0.7 + text*1*0.3 (text 10x smaller)": lambda c, x: c.vec_score * 0.7 + c.text_score * 0.3,
        "vec*0.7 + text*3*0.3": lambda c, x: c.vec_score * 0.7 + c.text_score * 3 * 0.3,
        "vec*0.7 + 10*0.3*ts_rank(len-normalised)": lambda c, x: c.vec_score * 0.7 + x[c.filename][0] * 3,
        "vec*0.7 + 10*0.3*ts_rank(english, stemmed)": lambda c, x: c.vec_score * 0.7 + x[c.filename][1] * 3,
        "text only (within pool)": lambda c, x: c.text_score,
    }
    runs: dict[str, dict[str, list[str]]] = {k: {} for k in orders}
    for q in queries:
        pool = pools[q["_id"]]
        rows = conn.execute(extra, {"text": q["text"], "ids": [c.filename for c in pool]}).fetchall()
        x = {r["filename"]: (float(r["norm"]), float(r["english"])) for r in rows}
        for name, key in orders.items():
            runs[name][q["_id"]] = [c.filename for c in sorted(pool, key=lambda c, key=key: -key(c, x))]
    base = runs["vec only"]
    out = {}
    for name, run in runs.items():
        moved = sum(run[q][:10] != base[q][:10] for q in run)
        out[name] = [*evaluate(run, queries, qrels), moved]
    return out


if __name__ == "__main__":
    sys.exit(main())
