"""What BM25's statistics cost the store stage (issue 27): the embed stage's write with the collection
table's statistics triggers (migration 0012) and without them, and a 10,000-chunk document's delete.

    .venv/bin/python bench/text_statistics.py                 # 50,000 rows, a few minutes
    .venv/bin/python bench/text_statistics.py --rows 100000
    .venv/bin/python bench/text_statistics.py --hnsw          # the tables as deployed, HNSW index kept

Two collection tables made by ``store.ensure_table`` (every index but the HNSW one, as ingest.py's
store comparison, unless ``--hnsw``), one with its triggers dropped. Each batch of ``--batch`` rows (a document's
chunks: precomputed 384-d vectors and scifact text cut at 600 characters, ingest.py's) is written
to both through ``store.replace_document_chunks``, the pipeline's write, in a rotating order, each
timed around its own call and committed. Then one document of 10,000 chunks is written to both and
deleted (``store.delete_document_chunks``), timed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid

from harness import migrated_database, print_table
from ingest import DIM, corpus_texts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--hnsw", action="store_true", help="keep the HNSW index (the table as deployed)")
    args = parser.parse_args()

    import numpy as np
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.rows import dict_row

    from sluice.vectors import store

    rng = np.random.default_rng(27)
    vectors = rng.standard_normal((max(args.rows, 10_000), DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = corpus_texts(max(args.rows, 10_000))
    kb = uuid.uuid4()
    url, server = migrated_database(args.database_url, "bench_text_statistics")
    try:
        with psycopg.connect(url, row_factory=dict_row) as conn:
            register_vector(conn)
            tables = {"with statistics": "bench_stats_on", "without (triggers dropped)": "bench_stats_off"}
            for name in tables.values():
                store.drop_table(conn, name)
                store.ensure_table(conn, name, DIM)
                if not args.hnsw:
                    conn.execute(f"DROP INDEX rag_{name}_embedding_idx")
            conn.execute("DROP TRIGGER text_stats_insert ON rag_bench_stats_off;"
                         "DROP TRIGGER text_stats_delete ON rag_bench_stats_off")
            conn.commit()

            def rows_of(lo: int, hi: int, doc: uuid.UUID) -> list[store.ChunkRow]:
                return [store.ChunkRow(document_id=doc, kb_id=kb, org_id=None, chunk_index=i - lo, content=texts[i],
                                       embedding=vectors[i].tolist()) for i in range(lo, hi)]

            seconds: dict[str, list[float]] = {label: [] for label in tables}
            labels = list(tables)
            for n, lo in enumerate(range(0, args.rows, args.batch)):
                batch_rows = rows_of(lo, min(lo + args.batch, args.rows), uuid.uuid4())
                for label in labels[n % 2:] + labels[:n % 2]:
                    started = time.perf_counter()
                    store.replace_document_chunks(conn, tables[label], batch_rows[0].document_id, batch_rows)
                    conn.commit()
                    seconds[label].append(time.perf_counter() - started)

            big = uuid.uuid4()
            deletes: dict[str, tuple[float, float]] = {}
            for label in labels:
                doc_rows = rows_of(0, 10_000, big)
                started = time.perf_counter()
                store.replace_document_chunks(conn, tables[label], big, doc_rows)
                conn.commit()
                written = time.perf_counter() - started
                started = time.perf_counter()
                store.delete_document_chunks(conn, tables[label], big)
                conn.commit()
                deletes[label] = (written, time.perf_counter() - started)
            lexemes = conn.execute("SELECT count(*) AS n FROM collection_lexemes").fetchone()["n"]
    finally:
        if server is not None:
            server.cleanup()

    base = sum(seconds[labels[1]])
    print_table(f"Store stage, {args.rows:,} rows in batches of {args.batch} through replace_document_chunks "
                f"(interleaved; {lexemes:,} distinct lexemes counted at the end; HNSW index "
                f"{'kept' if args.hnsw else 'dropped'})",
                ["table", "seconds", "rows/s", "median batch ms", "x the time without",
                 "10,000-chunk document: write s", "its delete s"],
                [[label, f"{sum(s):.1f}", f"{args.rows / sum(s):,.0f}", f"{statistics.median(s) * 1000:.0f}",
                  f"{sum(s) / base:.3f}", f"{deletes[label][0]:.2f}", f"{deletes[label][1]:.2f}"]
                 for label, s in seconds.items()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
