"""Retrieval quality on SciFact (BEIR test split): vector-only, hybrid, and Postgres full-text alone.

    .venv/bin/python bench/retrieval_quality.py            # ~6 min the first time (encoding), seconds after

Every SciFact document (title + abstract) is one chunk, embedded with the
default embedder (local all-MiniLM-L6-v2, 384-d, through ``build_embedder``)
and written with the store's COPY into a runtime table of an embedded
PostgreSQL. Each of the 300 test queries then runs through
``sluice.vectors.search.find_candidates`` (the service's own query):

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
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "bench" / "retrieval" / "scifact"
CACHE = ROOT / ".sluice" / "bench"

from functools import partial  # noqa: E402

from harness import TorchMiniLM, exported, migrated_database, model_digest, print_table, serving  # noqa: E402

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


# --- the service path --------------------------------------------------------------------------

def base_for(conn, collection: str, language: str, kb_id: uuid.UUID):
    """A knowledge base row naming the table, so the search service resolves it (operator scope)."""
    from sluice.db import knowledge_bases as kb_repo
    from sluice.db.knowledge_bases import KnowledgeBase

    return kb_repo.insert(conn, KnowledgeBase(
        id=kb_id, name=collection, collection_name=collection, scope="app", owner_id=None, org_id=None,
        is_default=False, description="", embedding_provider="local", embedding_model="all-MiniLM-L6-v2",
        embedding_dim=384, embedding_base_url=None, embedding_secret_id=None, ingestion_config={},
        created_by="bench", text_search_language=language))


def load_table(conn, collection: str, language: str, kb_id: uuid.UUID, corpus, texts, vecs) -> None:
    from psycopg import sql

    from sluice.vectors import store
    from sluice.vectors.names import table_ident

    store.drop_table(conn, collection)
    store.ensure_table(conn, collection, 384, language=language)
    store.insert_chunks(conn, collection, [
        store.ChunkRow(document_id=uuid.uuid5(uuid.NAMESPACE_URL, d["_id"]), kb_id=kb_id, org_id=None,
                       chunk_index=0, content=text, embedding=vec, filename=d["_id"])
        for d, text, vec in zip(corpus, texts, vecs, strict=True)])
    # The text side leaves out lexemes the collection's statistics find too common: ANALYZE keeps them.
    conn.execute(sql.SQL("ANALYZE {t}").format(t=table_ident(collection)))
    conn.commit()


def service_run(conn, collection: str, queries: list[dict], *, top_k: int, candidates: int) -> dict[str, list[str]]:
    """Each query through ``sluice.search.service.search`` itself: embedding, pool, order, gates, dedupe."""
    from sluice.embedding import build_embedder
    from sluice.identity import Principal
    from sluice.search.service import SearchRequest, operator_bases, search

    operator = Principal(user_id="bench", org_id=None, permissions=frozenset(), is_app_admin=True)
    run: dict[str, list[str]] = {}
    for q in queries:
        req = SearchRequest(query=q["text"], collections=[collection], top_k=top_k, candidates=candidates)
        outcome = search(conn, operator, req, embedder_for=build_embedder, bases_for=operator_bases)
        conn.rollback()
        run[q["_id"]] = [c.filename or "" for c in outcome.results]
    return run


def pool_run(conn, collection: str, queries: list[dict], query_vecs, *, candidates: int, keep: int,
             rank=None, common_share: float | None = None, gate: bool = True,
             text_side: bool = True) -> dict[str, list[str]]:
    """The union pool of ``candidates`` a side, in the service's order (``ranking.rank``), first ``keep``.
    ``rank`` and ``common_share`` vary the text side for the measurements that chose them."""
    from sluice.search.ranking import rank as policy
    from sluice.vectors import fulltext
    from sluice.vectors.search import BaseScope, find_candidates

    saved = fulltext.COMMON_LEXEME_SHARE
    if common_share is not None:
        fulltext.COMMON_LEXEME_SHARE = common_share
    try:
        scope = [BaseScope(_KB[collection], None)]
        run: dict[str, list[str]] = {}
        for q, qv in zip(queries, query_vecs, strict=True):
            found, _ = find_candidates(conn, collection, vector=qv, text=q["text"] if text_side else "", scope=scope,
                                       limit=candidates,
                                       rank=rank or fulltext.TEXT_RANK)
            conn.rollback()
            run[q["_id"]] = [c.filename or "" for c in policy(found, top_k=keep, gate=gate)]
        return run
    finally:
        fulltext.COMMON_LEXEME_SHARE = saved


_KB: dict[str, uuid.UUID] = {}


def exact_token_rows(conn, encoder, n: int = 60) -> list[list[object]]:
    """The issue's exact-token set: n near-identical notes, one identifier each, searched by it alone."""
    sys.path.insert(0, str(ROOT))
    from sluice.embedding import build_embedder
    from sluice.identity import Principal
    from sluice.search.service import DiagnosticRequest, SearchRequest, diagnostic, operator_bases, search
    from sluice.vectors import store
    from tests.integration.search.exact_tokens import notes

    pairs = notes(n)
    vecs = encoder.encode([text for _, text in pairs])
    operator = Principal(user_id="bench", org_id=None, permissions=frozenset(), is_app_admin=True)
    rows: list[list[object]] = []
    for language in ("simple", "english"):
        collection = f"bench_notes_{language}"
        kb_id = uuid.uuid4()
        store.drop_table(conn, collection)
        store.ensure_table(conn, collection, 384, language=language)
        base_for(conn, collection, language, kb_id)
        ids = [uuid.uuid4() for _ in pairs]
        store.insert_chunks(conn, collection, [
            store.ChunkRow(document_id=d, kb_id=kb_id, org_id=None, chunk_index=0, content=text, embedding=v)
            for d, (_, text), v in zip(ids, pairs, vecs, strict=True)])
        conn.commit()
        first = console_first = cleared = 0
        for (ident, _), doc_id in zip(pairs, ids, strict=True):
            seen = diagnostic(conn, operator, DiagnosticRequest(query=ident, collections=[collection]),
                              embedder_for=build_embedder, bases_for=operator_bases)
            console_first += seen.results[0].document_id == doc_id
            own = next(c for c in seen.results if c.document_id == doc_id)
            cleared += own.vec_score >= 0.30
            found = search(conn, operator, SearchRequest(query=ident, collections=[collection]),
                           embedder_for=build_embedder, bases_for=operator_bases)
            first += bool(found.results) and found.results[0].document_id == doc_id
            conn.rollback()
        rows.append([language, n, console_first, first, cleared])
    return rows


# --- main --------------------------------------------------------------------------------------

RANKS = [("ts_rank", 0), ("ts_rank", 1), ("ts_rank", 2), ("ts_rank", 32), ("ts_rank_cd", 0), ("ts_rank_cd", 1),
         ("ts_rank_cd", 2), ("ts_rank_cd", 32)]
SHARES = [0.01, 0.05, 0.2, 1.0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None, help="default: a throwaway embedded PostgreSQL")
    parser.add_argument("--paths", default="torch,onnx-fp32,onnx-int8",
                        help="embedding paths to compare, comma-separated (torch only where `make reference` "
                             "installed it); the first ONNX one serves the service path")
    parser.add_argument("--tokens-only", action="store_true",
                        help="only the exact-token lookups (a minute; no SciFact)")
    args = parser.parse_args()
    if args.tokens_only:
        return tokens_only(args.database_url)
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    if "torch" in paths and not _has_torch():
        print("torch: not installed (make reference), its row is left out")
        paths.remove("torch")
    main_path = next(p for p in paths if p.startswith("onnx"))

    import psycopg
    from pgvector.psycopg import register_vector

    from sluice.vectors.fulltext import TEXT_RANK, TextRank

    corpus, queries, qrels = load()
    doc_texts = [f"{d['title']} {d['text']}".strip() for d in corpus]
    query_texts = [q["text"] for q in queries]
    vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    rates: dict[str, float | None] = {}
    url, server = migrated_database(args.database_url, "bench_quality")
    try:
        with tempfile.TemporaryDirectory(prefix="sluice-bench-models-") as models, \
                psycopg.connect(url, row_factory=psycopg.rows.dict_row) as conn:
            register_vector(conn)
            main_encoder = None
            for path in paths:
                encoder = TorchMiniLM() if path == "torch" else exported(path.removeprefix("onnx-"), Path(models))
                doc_vecs, rates[path] = embed(doc_texts, "docs", encoder, path)
                vectors[path] = (doc_vecs, embed(query_texts, "queries", encoder, path)[0])
                if path == main_path:
                    main_encoder = encoder
            by_path: dict[str, tuple[float, float, float]] = {}
            for path in paths:
                collection = "bench_scifact_" + path.replace("-", "_")
                _KB[collection] = uuid.uuid4()
                load_table(conn, collection, "simple", _KB[collection], corpus, doc_texts, vectors[path][0])
                vec_only = pool_run(conn, collection, queries, vectors[path][1], candidates=100, keep=100,
                                    gate=False, text_side=False)
                hybrid = pool_run(conn, collection, queries, vectors[path][1], candidates=100, keep=100, gate=False)
                by_path[path] = (*evaluate(vec_only, queries, qrels), evaluate(hybrid, queries, qrels)[0])

            # The service path, in both languages, on the main path's vectors (its model serves the queries).
            with serving(main_encoder):
                service: dict[str, dict[str, tuple[float, float]]] = {}
                for language in ("simple", "english"):
                    collection = f"bench_scifact_{language}"
                    _KB[collection] = uuid.uuid4()
                    load_table(conn, collection, language, _KB[collection], corpus, doc_texts, vectors[main_path][0])
                    base_for(conn, collection, language, _KB[collection])
                    conn.commit()
                    qv = vectors[main_path][1]
                    started = time.perf_counter()
                    run8 = service_run(conn, collection, queries, top_k=10, candidates=8)
                    ms = (time.perf_counter() - started) * 1000 / len(queries)
                    service[language] = {
                        "search(), top_k 10, candidates 8 (default)": (*evaluate(run8, queries, qrels), ms),
                        "search(), top_k 10, candidates 100": (
                            *evaluate(service_run(conn, collection, queries, top_k=10, candidates=100), queries,
                                      qrels), None),
                        "pool of 100 a side, spec order, first 100 (no gate)": (
                            *evaluate(pool_run(conn, collection, queries, qv, candidates=100, keep=100, gate=False),
                                      queries, qrels), None),
                        "vector side alone, 100": (
                            *evaluate(pool_run(conn, collection, queries, qv, candidates=100, keep=100, gate=False,
                                               text_side=False), queries, qrels), None),
                    }
                ranks = {f"{f}, normalization {n}": evaluate(
                    pool_run(conn, "bench_scifact_english", queries, vectors[main_path][1], candidates=100, keep=10,
                             rank=TextRank(f, n)), queries, qrels)[0] for f, n in RANKS}
                shares = {share: evaluate(
                    pool_run(conn, "bench_scifact_english", queries, vectors[main_path][1], candidates=100, keep=10,
                             common_share=share), queries, qrels)[0] for share in SHARES}
                tokens = exact_token_rows(conn, main_encoder)
    finally:
        if server is not None:
            server.cleanup()

    torch_docs = vectors["torch"][0] if "torch" in vectors else None
    path_rows: list[list[object]] = []
    for path in paths:
        ndcg, rec, hybrid_ndcg = by_path[path]
        cos = "-"
        if torch_docs is not None and path != "torch":
            agreement = np.sum(vectors[path][0] * torch_docs, axis=1)
            cos = f"{agreement.mean():.5f} / {agreement.min():.5f}"
        rate = rates[path]
        path_rows.append([path, ndcg, rec, hybrid_ndcg, cos, "cached" if rate is None else f"{rate:.1f}"])
    table(f"Embedding paths, same run: vector side alone (pool 100) and the union pool of 100 a side in the spec "
          f"order, language simple; cosine to torch over the {len(corpus)} documents (mean / worst)",
          ["path", "nDCG@10", "R@100", "union nDCG@10", "cosine to torch", "docs/s encoding"], path_rows)

    rows: list[list[object]] = []
    for language, runs in service.items():
        for name, (ndcg, rec, ms) in runs.items():
            rows.append([f"{name} [{language}]", ndcg, rec if "100" in name else "-",
                         "-" if ms is None else f"{ms:.1f} ms/query"])
    rows += [[f"reference: {name}", n, r, "-"] for name, n, r in REFERENCES]
    table(f"SciFact test, {len(queries)} queries, {len(corpus)} docs, one chunk per doc, {main_path} "
          "(targets: search() top_k 10 nDCG@10 >= 0.72; R@100 with 100 candidates >= 0.95)",
          ["system", "nDCG@10", "R@100", "latency"], rows)
    table("The text side's rank inside the union pool (100 a side, english, first 10 after the gate): nDCG@10",
          ["rank", "nDCG@10", "in use"],
          [[name, v, "yes" if name == f"{TEXT_RANK.function}, normalization {TEXT_RANK.normalization}" else ""]
           for name, v in ranks.items()])
    from sluice.vectors.fulltext import COMMON_LEXEME_SHARE

    table("Lexemes left out of the text side when in more than this share of chunks (english, same pool): nDCG@10",
          ["share", "nDCG@10", "in use"],
          [[f"{share:.2f}", v, "yes" if share == COMMON_LEXEME_SHARE else ""] for share, v in shares.items()])
    tokens_table(tokens)
    return 0


def tokens_table(rows: list[list[object]]) -> None:
    table("Exact-token lookups: near-identical notes, one identifier each, searched by it alone",
          ["language", "notes", "first in the console (no gate)", "first in search()", "note clears vec gate"],
          rows)


def tokens_only(database_url: str | None) -> int:
    import psycopg
    from pgvector.psycopg import register_vector

    url, server = migrated_database(database_url, "bench_quality_tokens")
    try:
        with tempfile.TemporaryDirectory(prefix="sluice-bench-models-") as models, \
                psycopg.connect(url, row_factory=psycopg.rows.dict_row) as conn:
            register_vector(conn)
            encoder = exported("fp32", Path(models))
            with serving(encoder):
                tokens_table(exact_token_rows(conn, encoder))
    finally:
        if server is not None:
            server.cleanup()
    return 0


def _has_torch() -> bool:
    try:
        import sentence_transformers  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
