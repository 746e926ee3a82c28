"""The shipped fusion against the usual alternatives, on every corpus we have (issue 40, R-SRCH-10).

    .venv/bin/python bench/fusion_compare.py                 # 42 min on a busy machine, SciFact 30 of them
    .venv/bin/python bench/fusion_compare.py --only debian-de,debian-es
    .venv/bin/python bench/fusion_compare.py --only debian-en,debian-de,debian-es --sweep   # + alpha 0.2..0.8

One table. Each corpus is loaded into an embedded PostgreSQL in its language (one chunk a document,
embedded by the bundled model, cached like retrieval_quality.py's), and each query's pool is found by
the service's own ``find_candidates``:

* **lexical side alone** and **vector side alone**: each side's own top 100, by its own score;
* **search(), defaults**: ``sluice.search.service.search`` itself (candidates 8 a side, the model's
  gate, dedupe), top_k 10: the figure the spec's floor is about;
* the same pool of 8 a side, the same gates and dedupe, ordered by each fusion at alpha 0.5:
  **shipped** (``ranking.rank``), **z-score** (each score standardised over the pool),
  **RRF** (k 60, each score's rank in the pool), **min-max** (each score scaled by the pool's minimum
  and maximum, what Sluice shipped until 2026-12-03). Only the shipped one is independent of the pool.

nDCG@10, trec_eval's way (binary gains, every query counted). The corpora: SciFact (BEIR, in
../shared), the generated lay corpus (``lay_corpus.py``), the Debian FAQ and manual pages in English,
German and Spanish (``debian_corpus.py``, from Debian's packages), and the identifier set
(``identifiers.py``: 100 planted notes among the real files of ../shared, counted "first" at alpha
0.5, the default). A corpus whose data is absent is skipped with the reason. ``--sweep`` adds a second table: the same
pools ordered by each fusion at alpha 0.2 to 0.8 (how far each is from its own best alpha).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import retrieval_quality as rq  # noqa: E402  (sets up the environment through harness)
from harness import exported, migrated_database, print_table, serving  # noqa: E402

ALPHA = 0.5
RRF_K = 60
FUSIONS = ("shipped", "z-score", "RRF", "min-max")
SWEPT = ("shipped", "z-score", "min-max")  # RRF's alpha only weighs two rank lists
SWEEP = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


# --- the fusions compared --------------------------------------------------------------------

def _minmax(values: list[float]) -> list[float]:
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else (1.0 if v > 0 else 0.0) for v in values]


def _zscore(values: list[float]) -> list[float]:
    mean = statistics.fmean(values)
    sd = statistics.pstdev(values)
    return [(v - mean) / sd if sd > 0 else 0.0 for v in values]


def _rrf(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i], reverse=True)
    out = [0.0] * len(values)
    for r, i in enumerate(order, start=1):
        out[i] = 1.0 / (RRF_K + r)
    return out


SCALERS: dict[str, Callable[[list[float]], list[float]]] = {"z-score": _zscore, "RRF": _rrf, "min-max": _minmax}


def ranked(found: Sequence, fusion: str, *, top_k: int = 10, alpha: float = ALPHA) -> list:
    """The pool in ``fusion``'s order, through the service's gates and dedupe, first ``top_k``."""
    from sluice.search.ranking import DEDUPE_PREFIX, passes_gates, rank

    if fusion == "shipped":
        return rank(list(found), top_k=top_k, alpha=alpha)
    if not found:
        return []
    scale = SCALERS[fusion]
    vec, lex = scale([c.vec_score for c in found]), scale([c.text_score for c in found])
    if fusion == "RRF":  # a sum of reciprocal ranks; alpha 0.5 weighs them alike
        fused = [2 * (alpha * v + (1 - alpha) * t) for v, t in zip(vec, lex, strict=True)]
    else:
        fused = [alpha * v + (1 - alpha) * t for v, t in zip(vec, lex, strict=True)]
    order = sorted(zip(fused, found, strict=True), key=lambda p: (p[0], p[1].strong_match, p[1].vec_score),
                   reverse=True)
    seen: set[str] = set()
    out = []
    for _, c in order:
        if not passes_gates(c) or c.content[:DEDUPE_PREFIX] in seen:
            continue
        seen.add(c.content[:DEDUPE_PREFIX])
        out.append(c)
        if len(out) == top_k:
            break
    return out


# --- the corpora -----------------------------------------------------------------------------

def corpora(only: set[str] | None) -> tuple[dict[str, tuple], list[str]]:
    """name -> (documents, queries, qrels, languages); and the reasons of those skipped."""
    import debian_corpus
    import lay_corpus

    out: dict[str, tuple] = {}
    skipped: list[str] = []

    def wanted(name: str) -> bool:
        return only is None or name in only

    if wanted("scifact"):
        if (rq.DATA / "corpus.jsonl").is_file():
            out["scifact"] = (*rq.load(), ("simple", "english"))
        else:
            skipped.append(f"scifact: {rq.DATA} is absent (../shared/bench/retrieval/scifact)")
    if wanted("lay"):
        out["lay"] = (*lay_corpus.corpus(), ("simple", "english"))
    for code, language in (("en", "english"), ("de", "german"), ("es", "spanish")):
        name = f"debian-{code}"
        if not wanted(name):
            continue
        reason = debian_corpus.missing(language)
        if reason:
            skipped.append(f"{name}: {reason}")
        else:
            out[name] = (*debian_corpus.corpus(language), (language,))
    return out, skipped


def corpus_rows(conn, name: str, docs, queries, qrels, languages, encoder,
                sweeps: list[list[object]] | None = None) -> list[list[object]]:
    from sluice.embedding.catalog import vec_gate

    texts = [f"{d['title']} {d['text']}".strip() for d in docs]
    doc_vecs, _ = rq.embed(texts, "docs", encoder, "onnx-fp32", name)
    qv, _ = rq.embed([q["text"] for q in queries], "queries", encoder, "onnx-fp32", name)
    rows = []
    for language in languages:
        collection = f"bench_fc_{name.replace('-', '_')}_{language}"
        rq._KB[collection] = uuid.uuid4()
        rq._GATE[collection] = vec_gate("local", "all-MiniLM-L6-v2")
        rq.load_table(conn, collection, language, rq._KB[collection], docs, texts, doc_vecs)
        rq.base_for(conn, collection, language, rq._KB[collection])
        conn.commit()
        wide = rq.pools(conn, collection, queries, qv, candidates=100)
        lex = rq.evaluate(rq.ordered(queries, wide, alpha=0.0, keep=100, side="text"), queries, qrels)[0]
        vec = rq.evaluate(rq.ordered(queries, wide, alpha=1.0, keep=100, side="vector"), queries, qrels)[0]
        service = rq.evaluate(rq.service_run(conn, collection, queries, top_k=10, candidates=8), queries, qrels)[0]
        pooled = rq.pools(conn, collection, queries, qv, candidates=8)

        def ndcg(fusion: str, alpha: float = ALPHA, pooled: list = pooled) -> float:
            return rq.evaluate({q["_id"]: [c.filename or "" for c in ranked(found, fusion, alpha=alpha)]
                                for q, found in zip(queries, pooled, strict=True)}, queries, qrels)[0]

        fused = {f: ndcg(f) for f in FUSIONS}
        if sweeps is not None:
            sweeps += [[f"{name} [{language}]", f, *(ndcg(f, a) for a in SWEEP)] for f in SWEPT]
        rows.append([f"{name} [{language}], {len(queries)} q / {len(docs)} d", lex, vec, service,
                     *(fused[f] for f in FUSIONS), service - max(lex, vec)])
        print(f"  {rows[-1][0]}: " + ", ".join(f"{v:.4f}" for v in rows[-1][1:]), flush=True)
    return rows


def identifier_rows(conn, encoder) -> list[list[object]]:
    """The identifier set: notes first (of 100) under each fusion, defaults' pool (8 a side), alpha 0.5."""
    import identifiers
    import numpy as np

    from sluice.chunking.config import ChunkingPlan
    from sluice.chunking.splitting import split_text
    from sluice.embedding.catalog import vec_gate
    from sluice.vectors import store
    from sluice.vectors.search import BaseScope, find_candidates

    real = identifiers.real_texts()
    notes = identifiers.planted(100)
    plan = ChunkingPlan("recursive", 1000, 100)
    chunks = [(name, c.content, c.index) for name, text in [*real, *((n, t) for n, t, _ in notes)]
              for c in split_text(text, plan)]
    vectors, _ = rq.embed([text for _, text, _ in chunks], "docs", encoder, "onnx-fp32", "identifiers")
    query_vecs = np.asarray(encoder.encode([q for _, _, q in notes]), dtype=np.float32)
    gate = vec_gate("local", "all-MiniLM-L6-v2")
    rows = []
    for language in ("simple", "english"):
        collection, kb = f"bench_fc_ids_{language}", uuid.uuid4()
        store.drop_table(conn, collection)
        store.ensure_table(conn, collection, 384, language=language)
        store.insert_chunks(conn, collection, [
            store.ChunkRow(document_id=uuid.uuid5(uuid.NAMESPACE_URL, name), kb_id=kb, org_id=None,
                           chunk_index=index, content=text, embedding=vec, filename=name)
            for (name, text, index), vec in zip(chunks, vectors, strict=True)])
        conn.commit()
        first = dict.fromkeys(FUSIONS, 0)
        lex_first = vec_first = 0
        for (name, _, query), qv in zip(notes, query_vecs, strict=True):
            found, _ = find_candidates(conn, collection, vector=qv, text=query, scope=[BaseScope(kb, None)], limit=8)
            conn.rollback()
            for c in found:
                c.vec_gate = gate
            for f in FUSIONS:
                top = ranked(found, f, top_k=1)
                first[f] += bool(top) and top[0].filename == name
            by_lex = sorted((c for c in found if "text" in c.found_by), key=lambda c: c.text_score, reverse=True)
            by_vec = sorted((c for c in found if "vector" in c.found_by), key=lambda c: c.vec_score, reverse=True)
            lex_first += bool(by_lex) and by_lex[0].filename == name
            vec_first += bool(by_vec) and by_vec[0].filename == name
        label = f"identifiers [{language}], {len(notes)} notes / {len(chunks)} chunks"
        share = [n / len(notes) for n in (lex_first, vec_first, first["shipped"], *(first[f] for f in FUSIONS))]
        label += "" if real else " (no real files: ../shared/corpus/real is absent)"
        rows.append([label, *share, share[2] - max(share[:2])])
        print(f"  {rows[-1][0]}: " + ", ".join(f"{v:.4f}" for v in share), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None, help="default: a throwaway embedded PostgreSQL")
    parser.add_argument("--sweep", action="store_true", help="also each fusion at alpha 0.2 .. 0.8")
    parser.add_argument("--only", default=None,
                        help="comma-separated: scifact, lay, debian-en, debian-de, debian-es, identifiers")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None

    import psycopg
    from pgvector.psycopg import register_vector

    chosen, skipped = corpora(only)
    for reason in skipped:
        print(f"skipped {reason}", flush=True)
    url, server = migrated_database(args.database_url, "bench_fusion_compare")
    rows: list[list[object]] = []
    sweeps: list[list[object]] | None = [] if args.sweep else None
    try:
        with tempfile.TemporaryDirectory(prefix="sluice-bench-models-") as models, \
                psycopg.connect(url, row_factory=psycopg.rows.dict_row) as conn:
            register_vector(conn)
            encoder = exported("fp32", Path(models))
            with serving(encoder):
                for name, (docs, queries, qrels, languages) in chosen.items():
                    rows += corpus_rows(conn, name, docs, queries, qrels, languages, encoder, sweeps)
                if only is None or "identifiers" in only:
                    rows += identifier_rows(conn, encoder)
    finally:
        if server is not None:
            server.cleanup()
    print_table("nDCG@10 (identifiers: share of notes first), alpha 0.5; the fusions on search()'s own pool "
                "(8 a side), gates and dedupe; last column: search() minus the better side (floor: >= -0.005)",
                ["corpus [language]", "lexical alone", "vector alone", "search() defaults",
                 *(f"{f}" for f in FUSIONS), "defaults - better side"], rows, number_format="{:.4f}")
    if sweeps:
        print_table("nDCG@10 of each fusion by alpha, on search()'s own pool (8 a side), gates and dedupe",
                    ["corpus [language]", "fusion", *(f"alpha {a}" for a in SWEEP)], sweeps, number_format="{:.4f}")
    for reason in skipped:
        print(f"skipped {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
