"""Retrieval quality on SciFact (BEIR test split) and on a generated second corpus of short lay
questions (bench/lay_corpus.py): each side alone, the convex fusion at every alpha, search() itself.

    .venv/bin/python bench/retrieval_quality.py            # ~10 min the first time (encoding), minutes after
    .venv/bin/python bench/retrieval_quality.py --tokens-only

Every document (title + abstract) is one chunk, embedded with the default embedder (local
all-MiniLM-L6-v2, 384-d, the fp32 ONNX export the provider serves) and written with the store's
COPY into a runtime table of an embedded PostgreSQL, in 'simple' and in 'english'. Each query's
union pool (``sluice.vectors.search.find_candidates``, the service's own query, 100 a side) is then
ordered by ``sluice.search.ranking.rank`` (R-SRCH-1, revised 2026-12-02):

* the vector side alone: its candidates by cosine (alpha 1);
* the lexical side alone: its candidates by BM25 (alpha 0);
* the fusion at alpha 0.0 .. 1.0, no gate, first 10: what chose ``ranking.ALPHA``;
* ``search()`` itself, defaults (candidates 8, the model's gate) and top_k 10.

Also: the cosines of relevant chunks (what chose the catalog's ``vec_gate`` for the model), the
5,000-chunk common-lexeme cut with and without, and the exact-token lookups.

Scores follow trec_eval: binary gains, log2 discount, every query counted (an empty answer scores
0). Reference figures are SciFact's SOURCE.md and DESIGN.md's exact whole-document all-MiniLM run.
Embeddings are cached in .sluice/bench/ keyed by the corpus, the ONNX file's checksum and the
texts' checksum.
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

from harness import exported, migrated_database, model_digest, print_table, serving  # noqa: E402

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

def embed(texts: list[str], kind: str, encoder, path: str, corpus: str = "scifact"
          ) -> tuple[np.ndarray, float | None]:
    """The vectors, and chunks/s if they were encoded in this run (None from the cache)."""
    from sluice.embedding import EmbeddingSpec, find_model
    from sluice.embedding.local import LocalEmbedder

    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    cache = CACHE / f"{corpus}_{kind}_minilm_{path}_{model_digest(encoder)}_{digest}.npy"
    if cache.exists():
        return np.load(cache), None
    # Through the provider class the service uses, serving this path's encoder.
    embedder = LocalEmbedder(EmbeddingSpec("local", "all-MiniLM-L6-v2", 384),
                             find_model("local", "all-MiniLM-L6-v2"), model=encoder)
    started = time.perf_counter()
    vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    seconds = time.perf_counter() - started
    print(f"{corpus} {path}: encoded {len(texts)} {kind} in {seconds:.0f} s", flush=True)
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


def pools(conn, collection: str, queries: list[dict], query_vecs, *, candidates: int,
          common_rows: int | None = None) -> list[list]:
    """Each query's union pool of ``candidates`` a side (``find_candidates``, the service's query)."""
    from sluice.vectors.search import BaseScope, find_candidates

    scope = [BaseScope(_KB[collection], None)]
    out = []
    for q, qv in zip(queries, query_vecs, strict=True):
        found, _ = find_candidates(conn, collection, vector=qv, text=q["text"], scope=scope, limit=candidates,
                                   common_rows=common_rows)
        conn.rollback()
        for c in found:
            c.vec_gate = _GATE.get(collection)
        out.append(found)
    return out


def ordered(queries: list[dict], pooled: list[list], *, alpha: float, keep: int, gate: bool = False,
            side: str | None = None) -> dict[str, list[str]]:
    """The pools in the service's order (``ranking.rank``) at ``alpha``, first ``keep``; ``side``:
    only the candidates that side found (the side alone)."""
    from sluice.search.ranking import rank

    run: dict[str, list[str]] = {}
    for q, found in zip(queries, pooled, strict=True):
        if side is not None:
            found = [c for c in found if side in c.found_by]
        run[q["_id"]] = [c.filename or "" for c in rank(list(found), top_k=keep, alpha=alpha, gate=gate)]
    return run


_GATE: dict[str, float | None] = {}
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
            cleared += own.vec_score >= (own.vec_gate if own.vec_gate is not None else 0.30)
            found = search(conn, operator, SearchRequest(query=ident, collections=[collection]),
                           embedder_for=build_embedder, bases_for=operator_bases)
            first += bool(found.results) and found.results[0].document_id == doc_id
            conn.rollback()
        rows.append([language, n, console_first, first, cleared])
    return rows


# --- main --------------------------------------------------------------------------------------

ALPHAS = [round(0.1 * i, 1) for i in range(11)]


def cosine_gate_rows(doc_vecs, query_vecs, corpus, queries, qrels) -> list[list[object]]:
    """Where relevant chunks' cosines fall: the share of relevant (query, chunk) pairs under each floor,
    and of all pairs under it the share that are relevant."""
    index = {d["_id"]: i for i, d in enumerate(corpus)}
    sims = query_vecs @ doc_vecs.T
    relevant = np.zeros_like(sims, dtype=bool)
    for qi, q in enumerate(queries):
        for d in qrels.get(q["_id"], ()):
            if d in index:
                relevant[qi, index[d]] = True
    rel = sims[relevant]
    rows: list[list[object]] = []
    for floor in (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35):
        under = sims < floor
        rows.append([f"{floor:.2f}", f"{(rel < floor).mean():.4f}",
                     f"{relevant[under].mean() if under.any() else 0:.6f}", f"{relevant[~under].mean():.6f}"])
    rows.append(["percentiles 1/2/5 of relevant", " / ".join(f"{np.percentile(rel, p):.3f}" for p in (1, 2, 5)),
                 "", ""])
    return rows


def corpus_rows(conn, name: str, corpus, queries, qrels, qv, language: str) -> tuple[list[list[object]], dict]:
    """One corpus, one language: each side alone, the fusion at every alpha (pool of 100 a side, no
    gate, first 10), the union's recall, and search() itself with its defaults and top_k 10."""
    from sluice.search.ranking import ALPHA

    collection = f"bench_{name}_{language}"
    pooled = pools(conn, collection, queries, qv, candidates=100)
    rows: list[list[object]] = []
    vec = evaluate(ordered(queries, pooled, alpha=1.0, keep=100, side="vector"), queries, qrels)
    lex = evaluate(ordered(queries, pooled, alpha=0.0, keep=100, side="text"), queries, qrels)
    union = evaluate(ordered(queries, pooled, alpha=ALPHA, keep=200), queries, qrels)
    started = time.perf_counter()
    defaults = evaluate(service_run(conn, collection, queries, top_k=10, candidates=8), queries, qrels)
    ms = (time.perf_counter() - started) * 1000 / len(queries)
    wide = evaluate(service_run(conn, collection, queries, top_k=10, candidates=100), queries, qrels)
    rows += [[f"vector side alone, 100 [{language}]", vec[0], vec[1], "-"],
             [f"lexical side alone (BM25), 100 [{language}]", lex[0], lex[1], "-"],
             [f"union pool of 100 a side, alpha {ALPHA}, no gate [{language}]", union[0], union[1], "-"],
             [f"search(), defaults (candidates 8), top_k 10 [{language}]", defaults[0], "-", f"{ms:.1f} ms/query"],
             [f"search(), candidates 100, top_k 10 [{language}]", wide[0], "-", "-"]]
    sweep = {a: evaluate(ordered(queries, pooled, alpha=a, keep=10), queries, qrels)[0] for a in ALPHAS}
    return rows, sweep


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None, help="default: a throwaway embedded PostgreSQL")
    parser.add_argument("--tokens-only", action="store_true",
                        help="only the exact-token lookups (a minute; no SciFact)")
    args = parser.parse_args()
    if args.tokens_only:
        return tokens_only(args.database_url)

    import lay_corpus
    import psycopg
    from pgvector.psycopg import register_vector

    from sluice.embedding.catalog import vec_gate

    corpora = {"scifact": load(), "lay": lay_corpus.corpus()}
    url, server = migrated_database(args.database_url, "bench_quality")
    results: dict[str, dict[str, object]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="sluice-bench-models-") as models, \
                psycopg.connect(url, row_factory=psycopg.rows.dict_row) as conn:
            register_vector(conn)
            encoder = exported("fp32", Path(models))
            with serving(encoder):
                for name, (corpus, queries, qrels) in corpora.items():
                    texts = [f"{d['title']} {d['text']}".strip() for d in corpus]
                    doc_vecs, _ = embed(texts, "docs", encoder, "onnx-fp32", name)
                    qv, _ = embed([q["text"] for q in queries], "queries", encoder, "onnx-fp32", name)
                    rows: list[list[object]] = []
                    sweeps = {}
                    for language in ("simple", "english"):
                        collection = f"bench_{name}_{language}"
                        _KB[collection] = uuid.uuid4()
                        _GATE[collection] = vec_gate("local", "all-MiniLM-L6-v2")
                        load_table(conn, collection, language, _KB[collection], corpus, texts, doc_vecs)
                        base_for(conn, collection, language, _KB[collection])
                        conn.commit()
                        got, sweeps[language] = corpus_rows(conn, name, corpus, queries, qrels, qv, language)
                        rows += got
                    results[name] = {"rows": rows, "sweeps": sweeps, "n": (len(queries), len(corpus)),
                                     "gate": cosine_gate_rows(doc_vecs, qv, corpus, queries, qrels)}
                # The 5,000-row cut on SciFact's english lexical side: with it and without.
                qv = embed([q["text"] for q in corpora["scifact"][1]], "queries", encoder, "onnx-fp32", "scifact")[0]
                cut = {}
                for language in ("simple", "english"):
                    for label, rows_cut in (("with the cut", None), ("without", 10**9)):
                        pooled = pools(conn, f"bench_scifact_{language}", corpora["scifact"][1], qv, candidates=100,
                                       common_rows=rows_cut)
                        cut[f"{language}, {label}"] = evaluate(
                            ordered(corpora["scifact"][1], pooled, alpha=0.0, keep=100, side="text"),
                            corpora["scifact"][1], corpora["scifact"][2])[0]
                tokens = exact_token_rows(conn, encoder)
    finally:
        if server is not None:
            server.cleanup()

    from sluice.search.ranking import ALPHA

    for name, r in results.items():
        nq, nd = r["n"]  # type: ignore[misc]
        table(f"{name}: {nq} queries, {nd} chunks, onnx-fp32 all-MiniLM-L6-v2 (targets on SciFact: search() "
              "defaults >= 0.73, lexical alone >= 0.665, union R@100 >= 0.95; on lay: defaults >= each side)",
              ["system", "nDCG@10", "R@100", "latency"],
              r["rows"] + ([[f"reference: {n}", a, b, "-"] for n, a, b in REFERENCES] if name == "scifact" else []))
        sweeps = r["sweeps"]
        table(f"{name}: the fusion's alpha (pool of 100 a side, no gate, first 10): nDCG@10",
              ["alpha", "simple", "english", "in use"],
              [[a, sweeps["simple"][a], sweeps["english"][a], "yes" if a == ALPHA else ""] for a in ALPHAS])
        table(f"{name}: cosine of the relevant chunks (the gate): share of relevant pairs under the floor, "
              "share of pairs under / over it that are relevant",
              ["floor", "relevant under", "P(relevant | under)", "P(relevant | over)"], r["gate"])
    table("SciFact, lexical side alone: the 5,000-chunk common-lexeme cut: nDCG@10",
          ["language, cut", "nDCG@10"], [[k, v] for k, v in cut.items()])
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
