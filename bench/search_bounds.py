"""What bounds one search (issue 37, R-SRCH-8 and R-SRCH-9), on one collection table, one run.

    .venv/bin/python bench/search_bounds.py                 # 100,000 chunks (~10 min on 2 cores)
    .venv/bin/python bench/search_bounds.py --rows 20000    # a quicker look

The table is bench/search_latency.py's (generated 384-d vectors, 40 Zipf words a chunk, HNSW, GIN and
the statistics triggers), one organisation base holding every row. Three tables are printed:

1. The longest query a search takes (4,000 characters of distinct words of the collection's own
   vocabulary, each held by some chunks), through ``find_candidates`` as ``/rag/search`` runs it:
   with the R-SRCH-8 bounds (the rarest ``MAX_QUERY_LEXEMES`` lexemes scored, the statement timeout)
   and without them (every lexeme scored, no timeout: the code before the fix, ``--before`` queries
   of it, as each may take minutes); a four-word query beside them.
2. What the per-scope statistics (R-SRCH-9) cost a search: the statistics step alone
   (``scope_statistics``) for one base, for 50 bases of the collection, and for a shared-pool reader
   whose ``PRIVATE_DOC_CAP`` documents (``--pool-chunks`` chunks each) are counted as the search runs.
3. What they cost a write: ``insert_chunks`` of 1,000 chunks into one base, with the triggers and with
   them dropped (bench/text_statistics.py measures the same at more sizes).

4. Whether the lexeme cap can move a corpus's nDCG@10: the most lexemes a query of SciFact and of the
   lay corpus has, in ``simple`` and ``english``, against ``MAX_QUERY_LEXEMES``. A query of no more
   lexemes than the cap is scored exactly as without it, so where none is over, every ranking and
   the nDCG are unchanged by construction (``--cap-only`` prints this table alone, in seconds).

Latency is wall time of one call from Python, after a warm-up; p95 of the runs made.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid

import numpy as np
from harness import migrated_database, print_table
from search_latency import COLLECTION, DIM, VOCABULARY, generate, load_sluice, loaded_base, percentiles, words

QUERY_CHARS = 4_000  # the longest query a search takes (sluice.search.service)


def longest_query(rng: np.random.Generator) -> str:
    """4,000 characters of distinct words of the vocabulary, common and rare alike."""
    chosen: list[str] = []
    size = 0
    for r in rng.permutation(np.arange(1, VOCABULARY + 1)):
        word = f"w{r}"
        if size + len(word) + 1 > QUERY_CHARS:
            break
        chosen.append(word)
        size += len(word) + 1
    return " ".join(chosen)


def timed(fn, runs: int, warm: bool = True) -> list[float]:
    if warm:
        fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def cap_rows(conn) -> list[list[object]]:
    """Per corpus and language: queries, the most lexemes one has, how many are over the cap."""
    from lay_corpus import corpus as lay_corpus
    from retrieval_quality import DATA
    from retrieval_quality import load as scifact

    from sluice.vectors import fulltext

    corpora = {"lay": lay_corpus()[1]}
    if (DATA / "queries.jsonl").exists():
        corpora["SciFact"] = scifact()[1]
    else:
        print(f"SciFact skipped: {DATA} is absent (../shared beside the repository)")
    rows: list[list[object]] = []
    for name, queries in corpora.items():
        for language in ("simple", "english"):
            counts = [len(fulltext.query_lexemes(conn, language, q["text"])) for q in queries]
            over = sum(c > fulltext.MAX_QUERY_LEXEMES for c in counts)
            rows.append([name, language, len(counts), max(counts), fulltext.MAX_QUERY_LEXEMES, over,
                         "none (no query over the cap)" if over == 0 else "re-run retrieval_quality.py"])
    return rows


def print_cap(conn) -> None:
    print_table("4. the lexeme cap against the corpora's queries",
                ["corpus", "language", "queries", "most lexemes", "cap", "over the cap", "nDCG@10 change"],
                cap_rows(conn))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=30, help="runs of each bounded query")
    parser.add_argument("--before", type=int, default=3, help="runs of the unbounded longest query")
    parser.add_argument("--pool-chunks", type=int, default=500, help="chunks of each shared-pool document")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--cap-only", action="store_true", help="only table 4 (seconds)")
    args = parser.parse_args()

    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.rows import dict_row

    from sluice.db import documents as doc_repo
    from sluice.db import recipients
    from sluice.vectors import bounds, fulltext, store
    from sluice.vectors.names import table_name
    from sluice.vectors.scope import statistics_scope
    from sluice.vectors.search import BaseScope, find_candidates

    vectors, units, queries = generate(args.rows if not args.cap_only else 1, 8)
    rng = np.random.default_rng(37)
    url, server = migrated_database(args.database_url, "bench_search_bounds")
    try:
        with psycopg.connect(url, row_factory=dict_row) as conn:
            register_vector(conn)
            if args.cap_only:
                print_cap(conn)
                return 0
            kb = loaded_base(conn, args.rows)
            if kb is None:
                kb = uuid.uuid4()
                print(f"loading {args.rows:,} chunks...", flush=True)
                load_sluice(conn, vectors, units, kb, "vector")
            whole = [BaseScope(kb, "acme")]
            longest = longest_query(rng)
            short = " ".join(f"w{r}" for r in (3, 40, 700, 9000))

            def search(text: str) -> None:
                find_candidates(conn, COLLECTION, vector=queries[0], text=text, scope=whole, limit=8)
                conn.rollback()

            lexemes = len(fulltext.query_lexemes(conn, "simple", longest))
            rows_1 = []
            for label, text in (("four words", short), (f"longest ({lexemes:,} lexemes), bounded", longest)):
                p50, p95, _ = percentiles(timed(lambda t=text: search(t), args.runs))
                rows_1.append([label, p50, p95, args.runs])
            cap, limit = fulltext.MAX_QUERY_LEXEMES, bounds.SEARCH_STATEMENT_TIMEOUT_MS
            fulltext.MAX_QUERY_LEXEMES, bounds.SEARCH_STATEMENT_TIMEOUT_MS = 10**6, 0  # the code before the fix
            try:
                before = timed(lambda: search(longest), args.before, warm=False)
            finally:
                fulltext.MAX_QUERY_LEXEMES, bounds.SEARCH_STATEMENT_TIMEOUT_MS = cap, limit
            rows_1.append(["longest, unbounded (before)", statistics.median(before), max(before), args.before])
            print_table(f"1. the longest query on {args.rows:,} chunks (ms; statement timeout {limit / 1000:g} s)",
                        ["query", "p50", "p95", "runs"], rows_1, "{:,.1f}")
            print(f"unbounded / bounded, p50: {statistics.median(before) / rows_1[1][1]:,.0f}x")

            # 2. the statistics step: one base, 50 bases, a shared-pool reader
            others = [uuid.uuid4() for _ in range(49)]
            store.insert_chunks(conn, COLLECTION, [
                store.ChunkRow(document_id=uuid.uuid4(), kb_id=k, org_id="acme", chunk_index=0,
                               content=t, embedding=vectors[i])
                for i, (k, t) in enumerate(zip(others, words(rng, len(others), 40), strict=True))])
            pool = uuid.uuid4()
            conn.execute("""INSERT INTO knowledge_bases (id, name, collection_name, scope, org_id, description,
                                embedding_provider, embedding_model, embedding_dim, ingestion_config, created_by)
                            VALUES (%s, 'pool', %s, 'recipients', 'acme', '', 'local', 'all-MiniLM-L6-v2', %s,
                                    '{}', 'bench')""", (pool, COLLECTION, DIM))
            for d in range(20):
                doc = uuid.uuid4()
                doc_repo.insert(conn, id=doc, kb_id=pool, org_id="acme", collection_name=COLLECTION,
                                filename=f"{d}.txt", storage_path=f"rag/{COLLECTION}/{doc}/f.txt", status="done",
                                stage="done", vector_document_id=doc, chunk_count=args.pool_chunks)
                texts = words(rng, args.pool_chunks, 40)
                store.insert_chunks(conn, COLLECTION, [
                    store.ChunkRow(document_id=doc, kb_id=pool, org_id="acme", chunk_index=i, content=texts[i],
                                   embedding=vectors[i]) for i in range(args.pool_chunks)])
                recipients.add(conn, doc, ["reader"], org_id="acme", shared_by="bench")
            conn.commit()
            reader = [BaseScope(pool, "acme", recipient="reader")]
            table = table_name(COLLECTION)
            rows_2 = []
            for label, scope in (("one base", whole), ("50 bases", [*whole, *(BaseScope(k, "acme") for k in others)]),
                                 (f"shared pool: 20 documents of {args.pool_chunks} chunks", reader)):
                for qlabel, text in (("four words", short), ("longest", longest)):
                    lx = fulltext.query_lexemes(conn, "simple", text)
                    kb_ids, documents = statistics_scope(scope)

                    def step(lx=lx, kb_ids=kb_ids, documents=documents) -> None:
                        fulltext.scope_statistics(conn, table, lx, kb_ids, documents)
                        conn.rollback()

                    p50, p95, _ = percentiles(timed(step, args.runs))
                    full50, full95, _ = percentiles(timed(
                        lambda s=scope, t=text: (find_candidates(conn, COLLECTION, vector=queries[0], text=t,
                                                                 scope=s, limit=8), conn.rollback()), args.runs))
                    rows_2.append([label, qlabel, p50, p95, full50, full95])
            print_table("2. the per-scope statistics on a search (ms)",
                        ["scope", "query", "statistics p50", "statistics p95", "search p50", "search p95"],
                        rows_2, "{:,.2f}")

            # 3. a write of 1,000 chunks, with the triggers and without
            took: dict[bool, list[float]] = {False: [], True: []}
            for n in range(10):  # alternated, so the machine's load falls on both alike
                drop = bool(n % 2)
                if drop:
                    conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER text_stats_insert")
                texts = words(rng, 1000, 40)
                doc = uuid.uuid4()
                batch = [store.ChunkRow(document_id=doc, kb_id=kb, org_id="acme", chunk_index=i,
                                        content=texts[i], embedding=vectors[i]) for i in range(1000)]
                t0 = time.perf_counter()
                store.insert_chunks(conn, COLLECTION, batch)
                took[drop].append((time.perf_counter() - t0) * 1000)
                conn.rollback()  # the trigger's DISABLE with it
            rows_3 = [[label, statistics.median(took[drop]), max(took[drop])]
                      for label, drop in (("with per-base statistics", False), ("triggers dropped", True))]
            rows_3.append(["ratio", rows_3[0][1] / rows_3[1][1], rows_3[0][2] / rows_3[1][2]])
            print_table("3. a write of 1,000 chunks into a base (ms, 5 runs each, alternated, rolled back)",
                        ["triggers", "median", "max"], rows_3, "{:,.2f}")
            print_cap(conn)
    finally:
        if server is not None:
            server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
