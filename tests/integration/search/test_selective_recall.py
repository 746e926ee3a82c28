"""Scope before top-k (R-SRCH-3): a filter keeping 100 of 20,000 chunks still gets the true top 10.

The vectors are generated (clustered, 384-d, like sentence embeddings) and
written with COPY; nothing is embedded. The exact answer is computed here in
numpy over the rows in scope, so the test does not trust the database to
check itself.
"""

from __future__ import annotations

import uuid

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from sluice.vectors import store
from sluice.vectors.search import (
    MAX_EF_SEARCH,
    MIN_EF_SEARCH,
    BaseScope,
    ChunkFilter,
    choose_plan,
    graph_ef,
    scope_clause,
    vector_candidates,
)
from tests.integration.search.conftest import make_base

pytestmark = pytest.mark.slow

N, DIM, IN_SCOPE, K = 20_000, 384, 100, 10
COLLECTION = "big"


def clustered(rng: np.random.Generator, centres: np.ndarray, n: int) -> np.ndarray:
    x = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.normal(size=(n, centres.shape[1]))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(50, DIM))
    vectors = clustered(rng, centres, N)
    rare = np.zeros(N, dtype=bool)
    rare[rng.choice(N, IN_SCOPE, replace=False)] = True
    half = rng.random(N) < 0.5
    # Queries come from the same topics as the chunks, as questions about a corpus do.
    queries = clustered(np.random.default_rng(11), centres, 20)
    return vectors, rare, half, queries


@pytest.fixture(scope="module")
def loaded_url(pg_server, migrated_template, data):
    """One database for the module: 20,000 rows are written once, with COPY, the graph built after."""
    from tests.conftest import _with_db

    vectors, rare, half, _ = data
    name = f"t_recall_{uuid.uuid4().hex[:8]}"
    admin = pg_server.get_uri()
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}" TEMPLATE "{migrated_template}"')
    url = _with_db(admin, name)
    with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as c:
        register_vector(c)
        base = make_base(c, COLLECTION, dim=DIM)
        store.ensure_table(c, COLLECTION, DIM)
        # Building the graph once over the loaded rows is far quicker than growing it row by row.
        c.execute("DROP INDEX rag_big_embedding_idx")
        rows = [store.ChunkRow(document_id=uuid.uuid4(), kb_id=base.id, org_id="acme", chunk_index=i,
                               content=f"chunk {i}", embedding=vectors[i],
                               organizational_unit="rare" if rare[i] else "common",
                               source="upload" if half[i] else "s3")
                for i in range(N)]
        store.insert_chunks(c, COLLECTION, rows)
        c.execute("SET maintenance_work_mem = '256MB'")
        c.execute("CREATE INDEX rag_big_embedding_idx ON rag_big USING hnsw (embedding vector_cosine_ops)")
        c.execute("ANALYZE rag_big")
        c.commit()
    yield url, [BaseScope(base.id, "acme")]
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def conn(loaded_url):
    with psycopg.connect(loaded_url[0], row_factory=psycopg.rows.dict_row) as c:
        register_vector(c)
        yield c


@pytest.fixture
def loaded(loaded_url):
    return loaded_url[1]


def exact_top(vectors: np.ndarray, mask: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    idx = np.flatnonzero(mask)
    order = np.argsort(-(vectors[idx] @ q), kind="stable")
    return [int(i) for i in idx[order[:k]]]


def chunk_indexes(found) -> list[int]:
    return [c.chunk_index for c in found]


def test_a_filter_keeping_half_a_percent_returns_the_exact_top_k(conn, data, loaded):
    vectors, rare, _, queries = data
    flt = ChunkFilter(organizational_units=("rare",))
    for q in queries:
        found, plan = vector_candidates(conn, COLLECTION, vector=q, text="", scope=loaded, limit=K, filters=flt)
        assert chunk_indexes(found) == exact_top(vectors, rare, q, K)
        assert plan.strategy == "exact"


def test_the_plan_stays_exact_for_a_narrow_scope_even_above_the_exact_row_count(conn, data, loaded):
    # With the row-count shortcut out of the way, the selectivity rule alone must refuse the graph:
    # at 0.5% the graph would have to visit 8,000 rows for 10, beyond what ef_search allows.
    where, params = scope_clause(loaded, ChunkFilter(organizational_units=("rare",)))
    plan = choose_plan(conn, COLLECTION, where, params, K, iterative=False, exact_rows=50)
    assert plan.strategy == "exact"
    # ... and a broad scope goes to the graph with an ef_search sized to it
    where, params = scope_clause(loaded, ChunkFilter(sources=("upload",)))
    plan = choose_plan(conn, COLLECTION, where, params, K, iterative=False, exact_rows=50)
    assert plan.strategy == "hnsw" and plan.ef_search is not None and plan.ef_search >= 80
    plan = choose_plan(conn, COLLECTION, where, params, K, iterative=True, exact_rows=50)
    assert plan.strategy == "hnsw_iterative"


def test_the_graph_path_keeps_recall_at_a_half_selective_filter(conn, data, loaded, monkeypatch):
    import sluice.vectors.search as search_module

    vectors, _, half, queries = data
    monkeypatch.setattr(search_module, "EXACT_SCAN_ROWS", 50)
    flt = ChunkFilter(sources=("upload",))
    hits = 0
    for q in queries:
        found, plan = vector_candidates(conn, COLLECTION, vector=q, text="", scope=loaded, limit=K, filters=flt)
        assert plan.strategy == "hnsw" and all(c.source == "upload" for c in found)
        hits += len(set(chunk_indexes(found)) & set(exact_top(vectors, half, q, K)))
    assert hits / (K * len(queries)) >= 0.95


def test_the_exact_plan_does_not_use_the_graph(conn, loaded):
    from sluice.vectors.search import candidate_query

    where, params = scope_clause(loaded, ChunkFilter(organizational_units=("rare",)))
    params = {**params, "vec": np.ones(DIM, dtype=np.float32), "text": "", "limit": K}
    from pgvector import Vector

    params["vec"] = Vector(params["vec"])
    plan = conn.execute(b"EXPLAIN " + candidate_query(COLLECTION, where, "exact").as_bytes(conn), params).fetchall()
    text = "\n".join(next(iter(r.values())) for r in plan)
    assert "embedding_idx" not in text


def test_a_larger_table_walks_its_graph_further_within_what_pgvector_allows():
    # Recall of one ef falls as the graph grows (bench/search_latency.py: at ef 200, 0.97 over
    # 100,000 rows, 0.93 over 1,000,000), so the unfiltered floor grows with the table.
    sizes = [0, 20_000, 100_000, 300_000, 1_000_000, 10_000_000]
    efs = [graph_ef(n) for n in sizes]
    assert efs == sorted(efs)
    assert efs[0] == efs[2] == MIN_EF_SEARCH
    assert MIN_EF_SEARCH < efs[3] < efs[4] == efs[5] == MAX_EF_SEARCH


def test_the_plan_sizes_the_walk_by_the_table(conn, loaded, monkeypatch):
    import sluice.vectors.search as search_module

    where, params = scope_clause(loaded, ChunkFilter(sources=("upload",)))
    small = choose_plan(conn, COLLECTION, where, params, K, iterative=False, exact_rows=50)
    # the same table and scope, judged by a rule under which 20,000 rows is ten times the base size
    monkeypatch.setattr(search_module, "GRAPH_EF_BASE_ROWS", 2_000)
    large = choose_plan(conn, COLLECTION, where, params, K, iterative=False, exact_rows=50)
    assert small.strategy == large.strategy == "hnsw"
    assert small.ef_search == MIN_EF_SEARCH and large.ef_search == MAX_EF_SEARCH
