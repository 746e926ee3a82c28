"""Search latency and recall@10 against an exact scan, unfiltered and at 50%, 5% and 0.5% selectivity,
beside langchain-postgres ``PGVector.similarity_search_with_score_by_vector`` on the same data, same run.

    .venv/bin/python bench/search_latency.py                    # 100,000 chunks (about 10 min on 2 cores)
    .venv/bin/python bench/search_latency.py --rows 1000000     # the 1M figure: see bench/README.md for its cost

One collection of generated 384-d vectors (clustered, as sentence embeddings
are; queries drawn from the same topics) is written with COPY into Sluice's
runtime table (``store.ensure_table``: HNSW cosine, GIN, btree on the filter
columns; each chunk's text is 40 synthetic words with Zipf frequencies) and,
the same rows, into langchain-postgres's own tables. The filter is
``organizational_unit`` with OR'ed values (Sluice ``filters.organizational_unit``,
PGVector ``{"organizational_unit": {"$in": [...]}}``).

Rows per system and selectivity:

* Sluice: ``find_candidates`` (the service's query, plan chosen per query).
* Sluice + text: the same query with four words of text, as every search sends: the union pool's
  full-text side (R-SRCH-1) adds a GIN lookup; recall is of its vector side, latency of the whole.
* Sluice, 0.6 plan: the same, planned as for pgvector < 0.8 (``iterative=False``: one walk of at
  most ef_search 1000, no iterative scan); only on a server with 0.8, where the first row uses it.
* pgvector HNSW, naive: the same table, ``ORDER BY embedding <=> q LIMIT 10``
  with the filter in WHERE at the default ``ef_search`` 40 - what a post-filtered
  graph returns without Sluice's plan choice (shows the problem being solved).
* PGVector as shipped: langchain-postgres creates no vector index, so its query
  is an exact sequential scan.
* PGVector + HNSW: the same peer after adding the HNSW index its docs suggest.

Latency is wall time of one call from Python (client, round trip and server),
after a warm-up; recall@10 is against numpy's exact top 10 of the rows in scope.

``--index`` chooses what Sluice's HNSW index stores (default: what ``store.ensure_table`` builds
on this server); ``--compare-index`` then drops it, builds the other kind over the same rows and
measures Sluice again: build time, index size, recall and latency of ``vector`` against ``halfvec``.

``--with-writes`` then measures Sluice's rows again while a writer thread, on a connection of its
own, COPYs chunks into the same collection table in a loop, 1,000 a transaction (``insert_chunks``,
the store stage's write: HNSW, GIN, btree and the text-statistics triggers pay for each row), for
a second base of the same organisation, so the rows in scope and the exact answer stay those the
recall is computed against while every write lands in the graph and the indexes the queries read.
The writer's rate is printed beside the latencies. ``--sluice-only`` leaves out the peer and the
naive query (no peer tables are loaded). The figures go to ``bench/out/search_latency.json``
(``bench/capacity.py`` prints them in its table, with the run's date).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from collections import Counter
from functools import partial  # noqa: E402
from pathlib import Path

from harness import migrated_database, print_table  # noqa: E402

table = partial(print_table, number_format="{:,.2f}")

import numpy as np  # noqa: E402

DIM, K = 384, 10
COLLECTION = "bench_latency"
PEER_COLLECTION = "bench_latency_peer"
# organizational_unit values and their shares; filters OR them into the selectivities measured.
UNIT_SHARES = {"a": 0.005, "b": 0.045, "c": 0.45, "d": 0.50}
FILTERS: dict[str, list[str] | None] = {
    "none (100%)": None, "50%": ["a", "b", "c"], "5%": ["a", "b"], "0.5%": ["a"],
}


def generate(rows: int, queries: int, seed: int = 42) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(200, DIM)).astype(np.float32)
    vectors = np.empty((rows, DIM), dtype=np.float32)
    for start in range(0, rows, 100_000):
        n = min(100_000, rows - start)
        x = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.normal(size=(n, DIM)).astype(np.float32)
        vectors[start:start + n] = x / np.linalg.norm(x, axis=1, keepdims=True)
    units = rng.choice(list(UNIT_SHARES), size=rows, p=list(UNIT_SHARES.values()))
    q = centres[rng.integers(0, len(centres), queries)] + 0.6 * rng.normal(size=(queries, DIM)).astype(np.float32)
    return vectors, units, (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


VOCABULARY = 20_000  # synthetic words; frequencies follow Zipf's law, as words in text do
WORDS_PER_CHUNK, WORDS_PER_QUERY = 40, 4


def words(rng: np.random.Generator, n: int, per: int) -> list[str]:
    """``n`` texts of ``per`` words: a few very common (the text side drops those), most rare."""
    ranks = np.minimum(rng.zipf(1.2, size=(n, per)), VOCABULARY)
    return [" ".join(f"w{r}" for r in row) for row in ranks]


def exact_top(vectors: np.ndarray, mask: np.ndarray | None, q: np.ndarray) -> set[int]:
    scores = vectors @ q
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = np.argpartition(-scores, K)[:K]
    return {int(i) for i in top}


def percentiles(ms: list[float]) -> tuple[float, float, float]:
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    return float(p50), float(p95), float(p99)


def load_sluice(conn, vectors: np.ndarray, units: np.ndarray, kb: uuid.UUID, index: str) -> dict[str, float]:
    from sluice.vectors import store

    store.drop_table(conn, COLLECTION)
    store.ensure_table(conn, COLLECTION, DIM, index)
    # The graph is built once over the loaded rows: much faster than growing it row by row.
    conn.execute(f"DROP INDEX rag_{COLLECTION}_embedding_idx")
    conn.commit()
    t0 = time.perf_counter()
    doc = uuid.uuid4()
    rng = np.random.default_rng(7)
    for start in range(0, len(vectors), 50_000):
        texts = words(rng, min(50_000, len(vectors) - start), WORDS_PER_CHUNK)
        batch = [store.ChunkRow(document_id=doc, kb_id=kb, org_id="acme", chunk_index=i,
                                content=f"chunk {i} {texts[i - start]}", embedding=vectors[i],
                                organizational_unit=str(units[i]), source="upload")
                 for i in range(start, min(start + 50_000, len(vectors)))]
        store.insert_chunks(conn, COLLECTION, batch)
        conn.commit()
    t1 = time.perf_counter()
    conn.execute(f"ANALYZE rag_{COLLECTION}")
    conn.commit()
    return {"copy_s": t1 - t0, **build_index(conn, index)}


def build_index(conn, index: str) -> dict[str, float]:
    """Sluice's HNSW index of kind ``index``, as ``store.ensure_table`` defines it: build time and size."""
    from sluice.vectors import store

    print(f"sluice: building the {index} HNSW index...", flush=True)
    t0 = time.perf_counter()
    conn.execute(store.embedding_index(COLLECTION, DIM, index))  # type: ignore[arg-type]
    conn.commit()
    took = time.perf_counter() - t0
    size = conn.execute("SELECT pg_relation_size(%s) AS b", (f"rag_{COLLECTION}_embedding_idx",)).fetchone()["b"]
    conn.commit()
    print(f"sluice: {index} HNSW build {took:.0f} s, {size / 2**20:,.0f} MiB", flush=True)
    return {f"hnsw_build_s ({index})": took, f"hnsw_size_mib ({index})": size / 2**20}


def make_peer(url: str, *, fresh: bool = False, no_index: bool = False):
    from langchain_core.embeddings import FakeEmbeddings
    from langchain_postgres import PGVector

    sa_url = "postgresql+psycopg://" + url.split("://", 1)[1] if "://" in url else url
    if not sa_url.startswith("postgresql+psycopg"):
        from psycopg.conninfo import conninfo_to_dict

        d = conninfo_to_dict(url)
        sa_url = (f"postgresql+psycopg://{d.get('user', 'postgres')}@/{d['dbname']}"
                  f"?host={d.get('host', '')}&port={d.get('port', 5432)}")
    engine_args = {"connect_args": {"options": "-c enable_indexscan=off"}} if no_index else None
    return PGVector(FakeEmbeddings(size=DIM), connection=sa_url, collection_name=PEER_COLLECTION,
                    embedding_length=DIM, use_jsonb=True, pre_delete_collection=fresh, engine_args=engine_args)


def load_peer(url: str, conn, vectors: np.ndarray, units: np.ndarray) -> object:
    from pgvector import Vector
    from psycopg.types.json import Jsonb

    peer = make_peer(url, fresh=True)
    collection_id = conn.execute("SELECT uuid FROM langchain_pg_collection WHERE name = %s",
                                 (PEER_COLLECTION,)).fetchone()["uuid"]
    conn.commit()
    # Its own add_embeddings would take far longer for the same rows; the search is what is compared.
    with conn.cursor() as cur, cur.copy(
            "COPY langchain_pg_embedding (id, collection_id, embedding, document, cmetadata) "
            "FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["varchar", "uuid", "vector", "varchar", "jsonb"])
        for i in range(len(vectors)):
            copy.write_row((str(i), collection_id, Vector(vectors[i]), f"chunk {i}",
                            Jsonb({"organizational_unit": str(units[i]), "source": "upload"})))
    conn.commit()
    conn.execute("ANALYZE langchain_pg_embedding")
    conn.commit()
    return peer


def loaded_base(conn, rows: int) -> uuid.UUID | None:
    """The base of an earlier run's table, when it holds ``rows`` rows and its graph."""
    from sluice.vectors import store

    if not store.table_exists(conn, COLLECTION):
        return None
    found = conn.execute(f"SELECT count(*) AS n, min(kb_id::text) AS kb FROM rag_{COLLECTION}").fetchone()
    indexed = conn.execute("SELECT to_regclass(%s) IS NOT NULL AS ok",
                           (f"rag_{COLLECTION}_embedding_idx",)).fetchone()["ok"]
    conn.commit()
    return uuid.UUID(found["kb"]) if found["n"] == rows and indexed else None


def peer_rows(conn) -> int:
    if conn.execute("SELECT to_regclass('langchain_pg_embedding') IS NULL AS absent").fetchone()["absent"]:
        return 0
    n = conn.execute("SELECT count(*) AS n FROM langchain_pg_embedding").fetchone()["n"]
    conn.commit()
    return int(n)


def peer_has_hnsw(conn) -> bool:
    return bool(conn.execute("SELECT to_regclass('bench_peer_hnsw') IS NOT NULL AS ok").fetchone()["ok"])


SLUICE = "Sluice"
SLUICE_06 = "Sluice, 0.6 plan"
NAIVE = "pgvector HNSW naive (ef 40)"
SHIPPED = "PGVector as shipped (no idx)"
INDEXED = "PGVector + HNSW index"


def measure_interleaved(name: str, systems: list, queries: np.ndarray, truth: list[set[int]],
                        results: dict) -> None:
    """Each query goes to every system in turn, so a noisy neighbour slows them alike. The turn
    rotates: the first system to ask for a query's neighbourhood reads its pages from disk and
    the others find them cached (at 1M rows, 2x between first and second on identical plans)."""
    for _, call, _ in systems:
        for q in queries[:3]:
            call(q)  # warm-up: buffers and caches, not timed
    ms: dict[str, list[float]] = {s: [] for s, _, _ in systems}
    hits: dict[str, int] = {s: 0 for s, _, _ in systems}
    for i, q in enumerate(queries):
        for system, call, n in systems[i % len(systems):] + systems[:i % len(systems)]:
            if i >= n:
                continue
            t = time.perf_counter()
            got = call(q)
            ms[system].append((time.perf_counter() - t) * 1000)
            hits[system] += len(set(got) & truth[i])
    for system, _, _ in systems:
        recall = hits[system] / (K * len(ms[system]))
        results[(system, name)] = (ms[system], recall)
        p50, p95, _ = percentiles(ms[system])
        print(f"  {system:<28} {name:<12} p50 {p50:8.2f} ms  p95 {p95:8.2f} ms  recall@10 {recall:.3f}", flush=True)


class Writer:
    """COPY 1,000 chunks a transaction into the collection table, in a loop, until stopped."""

    def __init__(self, url: str, rows: int = 1000, seed: int = 30) -> None:
        self.url, self.rows, self.seed = url, rows, seed
        self.kb = uuid.uuid4()  # a second base in the same table: the queries' scope excludes its rows
        self.stop = threading.Event()
        self.commits: list[float] = []  # seconds per 1,000-row transaction
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Writer:
        self.thread.start()
        while not self.commits and self.error is None and self.thread.is_alive():
            time.sleep(0.05)  # the queries start once writes are flowing
        if self.error is not None:
            raise self.error
        self.started, self.before = time.perf_counter(), len(self.commits)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.seconds = time.perf_counter() - self.started
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        import psycopg

        from sluice.db.connection import _configure
        from sluice.vectors import store

        rng = np.random.default_rng(self.seed)
        centres = np.random.default_rng(42).normal(size=(200, DIM)).astype(np.float32)  # generate()'s topics
        # A few batches made up front and written again under new document ids: the writer's Python
        # work (it shares this process with the queries' client) stays small beside the server's.
        made = []
        for _ in range(4):
            x = centres[rng.integers(0, len(centres), self.rows)] + 0.6 * rng.normal(
                size=(self.rows, DIM)).astype(np.float32)
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            made.append((x, words(rng, self.rows, WORDS_PER_CHUNK)))
        try:
            with psycopg.connect(self.url, row_factory=psycopg.rows.dict_row) as conn:
                _configure(conn)  # as the pool configures each connection (the vector types)
                while not self.stop.is_set():
                    x, texts = made[len(self.commits) % len(made)]
                    doc = uuid.uuid4()
                    batch = [store.ChunkRow(document_id=doc, kb_id=self.kb, org_id="acme", chunk_index=i,
                                            content=f"chunk {i} {texts[i]}", embedding=x[i],
                                            organizational_unit="d", source="upload") for i in range(self.rows)]
                    t = time.perf_counter()
                    store.insert_chunks(conn, COLLECTION, batch)
                    conn.commit()
                    self.commits.append(time.perf_counter() - t)
                conn.execute(f"DELETE FROM rag_{COLLECTION} WHERE kb_id = %s", (self.kb,))  # --reuse finds its rows
                conn.commit()
        except BaseException as error:  # reported by __exit__
            self.error = error


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--peer-queries", type=int, default=30, help="the unindexed peer scans; fewer suffice")
    parser.add_argument("--database-url", default=None, help="default: a throwaway embedded PostgreSQL")
    parser.add_argument("--maintenance-work-mem", default="2GB")
    parser.add_argument("--no-peer-hnsw", action="store_true",
                        help="skip building the peer's HNSW index (at 1M rows it is another long build)")
    parser.add_argument("--index", choices=["vector", "halfvec"], default=None,
                        help="what Sluice's HNSW index stores (default: what store.ensure_table builds here)")
    parser.add_argument("--compare-index", action="store_true",
                        help="then rebuild Sluice's index as the other kind and measure Sluice again")
    parser.add_argument("--reuse", action="store_true",
                        help="with --database-url: keep tables an earlier run of the same --rows loaded "
                             "(the HNSW build is most of a 1M run)")
    parser.add_argument("--with-writes", action="store_true",
                        help="then measure Sluice again while a writer COPYs 1,000 chunks a transaction into the table")
    parser.add_argument("--sluice-only", action="store_true",
                        help="measure Sluice's rows only (no peer tables, no naive query)")
    args = parser.parse_args()

    import psycopg
    from pgvector import Vector
    from pgvector.psycopg import register_vector

    from sluice.db.migrations import version_tuple
    from sluice.vectors import store
    from sluice.vectors.plan import supports_iterative_scan, table_facts
    from sluice.vectors.search import BaseScope, ChunkFilter, find_candidates

    url, server = migrated_database(args.database_url, "bench_latency")
    results: dict[tuple[str, str], tuple[list[float], float]] = {}
    plan_counts: dict[tuple[str, str], dict[str, int]] = {}
    try:
        with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as conn:
            register_vector(conn)
            version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            pg = conn.execute("SHOW server_version").fetchone()
            conn.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
            conn.commit()
            server_version = version_tuple(version["extversion"])
            iterative = supports_iterative_scan(server_version)
            index = args.index or store.index_kind_for(server_version)
            print(f"PostgreSQL {pg['server_version']}, pgvector {version['extversion']}, {os.cpu_count()} cores, "
                  f"{args.rows:,} rows x {DIM}-d, {args.queries} queries", flush=True)
            t0 = time.perf_counter()
            vectors, units, queries = generate(args.rows, args.queries)
            print(f"generated in {time.perf_counter() - t0:.0f} s", flush=True)
            costs: dict[str, float] = {}
            kb = loaded_base(conn, args.rows) if args.reuse else None
            if kb is None:
                kb = uuid.uuid4()
                costs = load_sluice(conn, vectors, units, kb, index)
                print(f"sluice: COPY {costs['copy_s']:.0f} s", flush=True)
            else:
                index = table_facts(conn, COLLECTION).index
                conn.commit()
                print(f"sluice: reusing the loaded table and its {index} index", flush=True)
            if args.sluice_only:
                peer = as_shipped = None
            elif args.reuse and peer_rows(conn) == args.rows:
                peer = make_peer(url)
                print("peer: reusing the loaded rows", flush=True)
            else:
                t0 = time.perf_counter()
                peer = load_peer(url, conn, vectors, units)
                costs["peer_copy_s"] = time.perf_counter() - t0
                print(f"peer: COPY {costs['peer_copy_s']:.0f} s", flush=True)

            if not args.sluice_only and not args.no_peer_hnsw and not (args.reuse and peer_has_hnsw(conn)):
                t0 = time.perf_counter()
                conn.execute("CREATE INDEX bench_peer_hnsw ON langchain_pg_embedding "
                             "USING hnsw (embedding vector_cosine_ops)")
                conn.commit()
                costs["peer_hnsw_build_s"] = time.perf_counter() - t0
                print(f"peer: HNSW build {costs['peer_hnsw_build_s']:.0f} s", flush=True)
            # The peer as shipped has no vector index; with the index present, the same peer on a
            # connection that may not use index scans answers exactly as it would without one.
            if not args.sluice_only:
                as_shipped = make_peer(url, no_index=True)

            scope = [BaseScope(kb, "acme")]
            masks = {name: (None if f is None else np.isin(units, f)) for name, f in FILTERS.items()}
            truth = {name: [exact_top(vectors, m, q) for q in queries] for name, m in masks.items()}
            plans: dict[tuple[str, str], Counter] = {}

            # Each query's words (the text side of the union pool: one GIN lookup besides the graph walk).
            query_text = {q.tobytes(): t for q, t in zip(queries, words(np.random.default_rng(11), len(queries),
                                                                         WORDS_PER_QUERY), strict=True)}

            def sluice_call(flt, name: str, label: str, iterative: bool | None = None, with_text: bool = False,
                            common_rows: int | None = None):
                def call(q):
                    text = query_text[q.tobytes()] if with_text else ""
                    found, plan = find_candidates(conn, COLLECTION, vector=q, text=text, scope=scope, limit=K,
                                                  filters=flt, iterative=iterative, common_rows=common_rows)
                    conn.rollback()
                    plans.setdefault((label, name), Counter())[
                        plan.strategy + (f" ef {plan.ef_search}" if plan.ef_search else "")] += 1
                    # recall of the vector side, which the text side only adds to
                    return [c.chunk_index for c in found if "vector" in c.found_by]
                return call

            for name, values in FILTERS.items():
                flt = ChunkFilter(organizational_units=tuple(values)) if values else ChunkFilter()
                peer_filter = {"organizational_unit": {"$in": values}} if values else None
                sluice = sluice_call(flt, name, f"{SLUICE} ({index})")

                def naive(q, values=values):
                    where = "organizational_unit = ANY(%(u)s)" if values else "true"
                    # the ORDER BY the table's index answers (a halfvec index is an expression index)
                    order = (f"embedding::halfvec({DIM}) <=> %(q)s::halfvec({DIM})" if index == "halfvec"
                             else "embedding <=> %(q)s")
                    rows = conn.execute(f"SELECT chunk_index FROM rag_{COLLECTION} WHERE {where} "
                                        f"ORDER BY {order} LIMIT 10", {"q": Vector(q), "u": values})
                    out = [r["chunk_index"] for r in rows]
                    conn.rollback()
                    return out

                def shipped(q, f=peer_filter):
                    return [int(d.id) for d, _ in as_shipped.similarity_search_with_score_by_vector(
                        q.tolist(), k=K, filter=f)]

                def indexed(q, f=peer_filter):
                    return [int(d.id) for d, _ in peer.similarity_search_with_score_by_vector(
                        q.tolist(), k=K, filter=f)]

                systems = [(f"{SLUICE} ({index})", sluice, args.queries),
                           (f"{SLUICE} ({index}) + text", sluice_call(flt, name, f"{SLUICE} ({index}) + text",
                                                                      with_text=True), args.queries),
                           # BM25's IDF already discounts common words: the 5,000-chunk cut is for latency alone
                           (f"{SLUICE} ({index}) + text, no cut",
                            sluice_call(flt, name, f"{SLUICE} ({index}) + text, no cut", with_text=True,
                                        common_rows=10**12), args.queries)]
                if args.sluice_only:
                    systems = systems[:2]  # the service's query with and without its text side
                elif iterative:
                    systems.append((f"{SLUICE_06} ({index})", sluice_call(flt, name, f"{SLUICE_06} ({index})", False),
                                    args.queries))
                if not args.sluice_only:
                    systems += [(NAIVE, naive, args.queries), (SHIPPED, shipped, args.peer_queries)]
                    if not args.no_peer_hnsw:
                        systems.append((INDEXED, indexed, args.queries))
                measure_interleaved(name, systems, queries, truth[name], results)
            if args.with_writes:
                # The same queries with writes landing in the same table and graph.
                with Writer(url) as writer:
                    for name, values in FILTERS.items():
                        flt = ChunkFilter(organizational_units=tuple(values)) if values else ChunkFilter()
                        label = f"{SLUICE} ({index}) + writes"
                        systems = [(label, sluice_call(flt, name, label), args.queries),
                                   (f"{SLUICE} ({index}) + text + writes",
                                    sluice_call(flt, name, f"{SLUICE} ({index}) + text + writes", with_text=True),
                                    args.queries)]
                        measure_interleaved(name, systems, queries, truth[name], results)
                written = (len(writer.commits) - writer.before) * writer.rows  # committed while the queries ran
                costs["writer rows during the queries"] = written
                costs["writer rows/s"] = written / max(1e-9, writer.seconds)
                costs["writer s per 1,000-row COPY + commit, p50"] = float(np.median(writer.commits))
                print(f"writer: {written:,} rows in {writer.seconds:.0f} s ({costs['writer rows/s']:.0f} rows/s), "
                      f"p50 {costs['writer s per 1,000-row COPY + commit, p50']:.2f} s a transaction", flush=True)
            if args.compare_index:
                other = "vector" if index == "halfvec" else "halfvec"
                conn.execute(f"DROP INDEX rag_{COLLECTION}_embedding_idx")
                conn.commit()
                costs.update(build_index(conn, other))
                conn.execute(f"ANALYZE rag_{COLLECTION}")
                conn.commit()
                for name, values in FILTERS.items():
                    flt = ChunkFilter(organizational_units=tuple(values)) if values else ChunkFilter()
                    systems = [(f"{SLUICE} ({other})", sluice_call(flt, name, f"{SLUICE} ({other})"), args.queries)]
                    if iterative:
                        label = f"{SLUICE_06} ({other})"
                        systems.append((label, sluice_call(flt, name, label, False), args.queries))
                    measure_interleaved(name, systems, queries, truth[name], results)
            plan_counts = {key: dict(c) for key, c in plans.items()}
    finally:
        if server is not None:
            server.cleanup()

    rows = []
    systems_seen = list(dict.fromkeys(system for system, _ in results))
    for name in FILTERS:
        for system in systems_seen:
            if (system, name) not in results:
                continue
            ms, recall = results[(system, name)]
            p50, p95, p99 = percentiles(ms)
            extra = ", ".join(f"{k} {v}" for k, v in sorted(plan_counts.get((system, name), {}).items()))
            rows.append([name, system, p50, p95, p99, f"{recall:.3f}", extra])
    table(f"{args.rows:,} chunks x {DIM}-d, top 10, latency in ms (wall, from Python)",
          ["filter", "system", "p50", "p95", "p99", "recall@10", "Sluice plans"], rows)
    table("Load costs (seconds)", ["step", "s"], [[k, v] for k, v in costs.items()])
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "search_latency.json").write_text(json.dumps({
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average": list(os.getloadavg()),
        "rows": args.rows, "queries": args.queries, "costs": costs,
        "results": [{"system": system, "filter": name, "ms": ms, "recall": recall}
                    for (system, name), (ms, recall) in results.items()],
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
