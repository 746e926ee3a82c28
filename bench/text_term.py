"""How far the full-text term can take SciFact's nDCG@10 inside the union pool (issue 13).

    .venv/bin/python bench/text_term.py      # ~5 min (needs the cached vectors of retrieval_quality.py)

The service's order is fixed by SPEC R-SRCH-1: ``vec_score * 0.7 + text_score * 10 * 0.3``, then the
``vec_score >= 0.30`` gate, first 10. What Sluice chooses is the text score: the Postgres rank
function and its length normalisation, and which lexemes the query keeps. This script measures every
choice on the union pool of 100 a side (vector top 100 by exact cosine, full-text top 100 by the same
rank), for ``simple`` and ``english``, and beside them the same order with the text term multiplied
by a factor — which the spec does not allow — to show how much of the distance to the issue's 0.72
target is the spec's weight rather than the rank.

The full-text features come from PostgreSQL (``ts_rank`` over the collection's generated column and
``sluice.vectors.fulltext.text_query``), the cosine from the cached fp32 vectors; scores are those of
``retrieval_quality.py`` (trec_eval semantics).
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from functools import partial  # noqa: E402

import numpy as np  # noqa: E402
import retrieval_quality as rq  # noqa: E402
from harness import migrated_database, print_table  # noqa: E402

table = partial(print_table, number_format="{:.4f}")
NORMALIZATIONS = (0, 1, 8, 16, 32)
FACTORS = (0.5, 1.0, 2.0, 5.0, 12.0)
POOL = 100


def features(language: str, corpus, texts, vectors) -> dict[tuple[str, float], list[dict]]:
    """Per (query, common-lexeme share): every chunk the text query matches, with each rank."""
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql

    from sluice.vectors.fulltext import COMMON_LEXEME_SHARE, text_query
    from sluice.vectors.names import table_ident

    ranks = sql.SQL(", ").join(
        sql.SQL("ts_rank(content_tsv, %(q)s::tsquery, {n}) AS {a}").format(n=sql.Literal(n), a=sql.Identifier(f"r{n}"))
        for n in NORMALIZATIONS)
    url, server = migrated_database(None, f"bench_text_term_{language}")
    found: dict[tuple[str, float], list[dict]] = {}
    try:
        with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as conn:
            register_vector(conn)
            collection = f"bench_text_term_{language}"
            rq.load_table(conn, collection, language, uuid.uuid4(), corpus, texts, vectors)
            query = sql.SQL("SELECT filename, {ranks} FROM {t} WHERE content_tsv @@ %(q)s::tsquery").format(
                ranks=ranks, t=table_ident(collection))
            for q in QUERIES:
                for share in (COMMON_LEXEME_SHARE, 1.0):
                    tq = text_query(conn, collection, language, q["text"], common_share=share)
                    found[(q["_id"], share)] = conn.execute(query, {"q": tq.tsquery}).fetchall() if tq.tsquery else []
                conn.rollback()
    finally:
        if server is not None:
            server.cleanup()
    return found


def ndcg(found, cosine: np.ndarray, ids: list[str], qrels, *, share: float, rank: str, factor: float) -> float:
    """The union pool in the spec's order with the text term times ``factor``, gated, first 10."""
    run: dict[str, list[str]] = {}
    for i, q in enumerate(QUERIES):
        rows = {r["filename"]: r for r in found[(q["_id"], share)]}
        pool = {ids[j] for j in np.argsort(-cosine[i])[:POOL]}
        pool |= {r["filename"] for r in sorted(rows.values(), key=lambda r: (-r[rank], r["filename"]))[:POOL]}
        scored = []
        for doc in pool:
            vec = float(cosine[i][INDEX[doc]])
            if vec >= 0.30:
                text = rows[doc][rank] if doc in rows else 0.0
                scored.append((vec * 0.7 + text * 10 * 0.3 * factor, doc))
        run[q["_id"]] = [doc for _, doc in sorted(scored, reverse=True)[:10]]
    return rq.evaluate(run, QUERIES, qrels)[0]


QUERIES: list[dict] = []
INDEX: dict[str, int] = {}


def main() -> int:
    if not rq.DATA.exists():
        print(f"SciFact is not here ({rq.DATA}): this benchmark needs ../shared beside the repository.")
        return 0
    cached = {kind: sorted(rq.CACHE.glob(f"scifact_{kind}_minilm_onnx-fp32_*.npy")) for kind in ("docs", "queries")}
    if not cached["docs"] or not cached["queries"]:
        print("No cached fp32 vectors: run `bench/retrieval_quality.py --paths onnx-fp32` once first.")
        return 1
    corpus, queries, qrels = rq.load()
    QUERIES[:] = queries
    ids = [d["_id"] for d in corpus]
    INDEX.update({d: i for i, d in enumerate(ids)})
    texts = [f"{d['title']} {d['text']}".strip() for d in corpus]
    docs, query_vecs = np.load(cached["docs"][-1]), np.load(cached["queries"][-1])
    cosine = query_vecs @ docs.T
    from sluice.vectors.fulltext import COMMON_LEXEME_SHARE, TEXT_RANK

    for language in ("simple", "english"):
        found = features(language, corpus, texts, docs)
        rows = []
        for share in (COMMON_LEXEME_SHARE, 1.0):
            for n in NORMALIZATIONS:
                in_use = share == COMMON_LEXEME_SHARE and n == TEXT_RANK.normalization
                rows.append([f"ts_rank, normalization {n}, lexemes in <= {share:.0%} of chunks"
                             + (" (in use)" if in_use else ""),
                             *[ndcg(found, cosine, ids, qrels, share=share, rank=f"r{n}", factor=f) for f in FACTORS]])
        table(f"SciFact nDCG@10, union pool of {POOL} a side, spec order with the text term x factor, gate 0.30, "
              f"first 10 [{language}] (the spec's order is factor 1.0; target 0.72)",
              ["text score", *[f"x{f:g}" for f in FACTORS]], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
