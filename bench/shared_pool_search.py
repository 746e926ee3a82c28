"""A document shared into several private pools (R-ACC-6): what one shared copy costs a recipient's
search against what the alternative (one upload per recipient into their personal base) stores.

    .venv/bin/python bench/shared_pool_search.py                 # 2,000 documents x 3 recipients, ~2 min

One organization's shared pool holds ``--documents`` documents of ``--chunks`` chunks each, every
one shared with ``--recipients`` of ``--users`` users (``document_recipients`` rows). The comparison
stores the same documents the way an organization must without sharing: one copy per recipient,
each in that user's personal base. Both are written with COPY into one Sluice runtime table each
(HNSW, GIN, btree, as ``store.ensure_table`` builds them) and searched with ``find_candidates``
(the service's query: the union of the vector and the full-text top 8, plan chosen per query):

* shared: the recipients base scoped with the recipient check (a semi-join on document_recipients
  inside the WHERE both sides share);
* copies: the user's personal base (``kb_id`` and tenant only).

Latency is wall time of one call from Python after a warm-up, the median over every query; the
same user and query vector on both sides. Recall is of the vector side's top 8 against numpy's exact
top 8 of that user's chunks (both must be 1.0: the check is applied before the top-k).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import numpy as np
from harness import migrated_database, print_table

DIM, K = 384, 8
ORG = "bench_org"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--documents", type=int, default=2000)
    ap.add_argument("--chunks", type=int, default=5)
    ap.add_argument("--users", type=int, default=400)
    ap.add_argument("--recipients", type=int, default=3)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--database-url", default=None)
    args = ap.parse_args()

    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.rows import dict_row

    from sluice.vectors import store
    from sluice.vectors.search import BaseScope, find_candidates

    url, server = migrated_database(args.database_url, "bench_shared_pool")
    rng = np.random.default_rng(7)
    users = [f"user{i}" for i in range(args.users)]
    docs = [uuid.uuid4() for _ in range(args.documents)]
    shared_with = {d: list(rng.choice(users, size=args.recipients, replace=False)) for d in docs}
    vectors = rng.standard_normal((args.documents, args.chunks, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
    words = ["lease", "tenant", "refusal", "warehouse", "harbour", "offer", "landlord", "clause"]

    def text(d: int, c: int) -> str:
        return " ".join(words[(d + c + i) % len(words)] for i in range(12)) + f" document {d} part {c}"

    with psycopg.connect(url, row_factory=dict_row, autocommit=False) as conn:
        register_vector(conn)
        shared_kb = uuid.uuid4()
        conn.execute(
            "INSERT INTO knowledge_bases (id, name, collection_name, scope, org_id, embedding_provider, "
            "embedding_model, embedding_dim, created_by) VALUES (%s, 'shared', 'bench_shared', 'recipients', "
            "%s, 'local', 'all-MiniLM-L6-v2', %s, 'bench')", (shared_kb, ORG, DIM))
        personal = {u: uuid.uuid4() for u in users}
        for u, kb in personal.items():
            conn.execute(
                "INSERT INTO knowledge_bases (id, name, collection_name, scope, owner_id, org_id, embedding_provider, "
                "embedding_model, embedding_dim, created_by) VALUES (%s, 'mine', 'bench_copies', 'personal', %s, "
                "%s, 'local', 'all-MiniLM-L6-v2', %s, %s)", (kb, u, ORG, DIM, u))
        for d in docs:
            conn.execute("INSERT INTO documents (id, kb_id, org_id, collection_name, filename, status) "
                         "VALUES (%s, %s, %s, 'bench_shared', 'doc.txt', 'done')", (d, shared_kb, ORG))
            for u in shared_with[d]:
                conn.execute("INSERT INTO document_recipients (document_id, user_id, org_id, shared_by) "
                             "VALUES (%s, %s, %s, 'bench')", (d, u, ORG))
        store.ensure_table(conn, "bench_shared", DIM)
        store.ensure_table(conn, "bench_copies", DIM)
        shared_rows, copy_rows = [], []
        for i, d in enumerate(docs):
            for c in range(args.chunks):
                shared_rows.append(store.ChunkRow(d, shared_kb, ORG, c, text(i, c), vectors[i, c].tolist()))
                for u in shared_with[d]:
                    copy_rows.append(store.ChunkRow(uuid.uuid5(d, u), personal[u], ORG, c, text(i, c),
                                                    vectors[i, c].tolist()))
        store.insert_chunks(conn, "bench_shared", shared_rows)
        store.insert_chunks(conn, "bench_copies", copy_rows)
        conn.execute("ANALYZE rag_bench_shared")
        conn.execute("ANALYZE rag_bench_copies")
        conn.commit()

        holders = [u for u in users if any(u in r for r in shared_with.values())]
        queries = rng.standard_normal((args.queries, DIM)).astype(np.float32)
        timings: dict[str, list[float]] = {"shared": [], "copies": []}
        recall: dict[str, list[float]] = {"shared": [], "copies": []}
        for n, q in enumerate(queries):
            user = holders[n % len(holders)]
            mine = [(i, c) for i, d in enumerate(docs) if user in shared_with[d] for c in range(args.chunks)]
            scores = np.array([vectors[i, c] @ q / np.linalg.norm(q) for i, c in mine])
            exact = {(docs[mine[j][0]], mine[j][1]) for j in np.argsort(-scores)[:K]}
            cases = {
                "shared": ("bench_shared", [BaseScope(shared_kb, ORG, recipient=user)]),
                "copies": ("bench_copies", [BaseScope(personal[user], ORG)]),
            }
            for name, (collection, scope) in cases.items():
                find_candidates(conn, collection, vector=q.tolist(), text="tenant refusal", scope=scope, limit=K)
                started = time.perf_counter()
                found, _plan = find_candidates(conn, collection, vector=q.tolist(), text="tenant refusal",
                                               scope=scope, limit=K)
                timings[name].append((time.perf_counter() - started) * 1000)
                vector_side = [f for f in found if "vector" in f.found_by]
                if name == "shared":
                    got = {(f.document_id, f.chunk_index) for f in vector_side}
                else:
                    back = {uuid.uuid5(d, user): d for d in docs if user in shared_with[d]}
                    got = {(back[f.document_id], f.chunk_index) for f in vector_side}
                recall[name].append(len(got & exact) / len(exact))
            conn.rollback()

    shared_p50, copies_p50 = statistics.median(timings["shared"]), statistics.median(timings["copies"])
    print_table(
        f"Shared pool: {args.documents:,} documents x {args.chunks} chunks, each shared with {args.recipients} of "
        f"{args.users} users; {args.queries} queries (median)",
        ["figure", "Sluice (one shared copy)", "comparison (a copy per recipient)", "ratio"],
        [
            ["chunks stored", f"{len(shared_rows):,}", f"{len(copy_rows):,}",
             f"{len(shared_rows) / len(copy_rows):.2f}"],
            ["embedding passes per document", "1", str(args.recipients), f"{1 / args.recipients:.2f}"],
            ["search p50 (ms)", f"{shared_p50:.2f}", f"{copies_p50:.2f}", f"{shared_p50 / copies_p50:.2f}"],
            ["recall@8 of the vector side", f"{statistics.mean(recall['shared']):.3f}",
             f"{statistics.mean(recall['copies']):.3f}", ""],
        ],
    )
    if server is not None:
        server.cleanup()


if __name__ == "__main__":
    main()
