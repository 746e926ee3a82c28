"""The plan decision from plain facts (``plan_for``): what a scope's size, the table's size and the
database's pgvector lead to, without a database."""

from __future__ import annotations

import itertools

import pytest

from sluice.vectors.plan import MAX_EF_SEARCH, plan_for

K = 10
TABLES = [1_000, 20_000, 100_000, 300_000, 1_000_000, 10_000_000]
SHARES = [1.0, 0.5, 0.2, 0.05, 0.02, 0.01, 0.005, 0.0001]


@pytest.mark.parametrize(("table", "share"), list(itertools.product(TABLES, SHARES)))
def test_without_iterative_scans_the_planner_never_picks_them(table, share):
    # pgvector < 0.8 has no hnsw.iterative_scan: a plan that relied on it would come back short.
    plan = plan_for(table * share, table, K, iterative=False)
    assert plan.strategy in ("exact", "hnsw")
    assert plan.max_scan_tuples == 0
    if plan.strategy == "hnsw":
        assert plan.ef_search is not None and plan.ef_search <= MAX_EF_SEARCH


@pytest.mark.parametrize(("table", "share"), list(itertools.product(TABLES, SHARES)))
def test_with_iterative_scans_a_graph_plan_is_the_iterative_one(table, share):
    plan = plan_for(table * share, table, K, iterative=True)
    assert plan.strategy in ("exact", "hnsw_iterative")
    if plan.strategy == "hnsw_iterative":
        assert plan.ef_search is not None and plan.ef_search <= MAX_EF_SEARCH
        assert plan.fetch >= K and plan.max_scan_tuples > 0


def test_a_small_scope_is_scored_exactly_on_any_server():
    for iterative in (False, True):
        assert plan_for(500, 1_000_000, K, iterative=iterative).strategy == "exact"
        assert plan_for(5_000, 1_000_000, K, iterative=iterative).strategy == "exact"  # 0.5% of 1M


def test_a_broad_scope_walks_the_graph_on_any_server():
    assert plan_for(1_000_000, 1_000_000, K, iterative=False).strategy == "hnsw"
    assert plan_for(1_000_000, 1_000_000, K, iterative=True).strategy == "hnsw_iterative"
    assert plan_for(50_000, 100_000, K, iterative=True).strategy == "hnsw_iterative"


def test_a_large_table_is_walked_past_one_walk_only_where_the_server_can():
    # At 1M rows one walk of ef_search 1000 found 0.95-0.97 of the true ten (bench/README.md); the
    # iterative scan carries the walk further and returns every row in scope it found on the way.
    iterative = plan_for(1_000_000, 1_000_000, K, iterative=True)
    single = plan_for(1_000_000, 1_000_000, K, iterative=False)
    assert iterative.ef_search == single.ef_search == MAX_EF_SEARCH
    assert iterative.fetch > MAX_EF_SEARCH and single.fetch == K
    # a filter keeping 5% asks for the rows in scope such a walk holds: fewer, but still past one walk
    filtered = plan_for(50_000, 1_000_000, K, iterative=True)
    assert filtered.strategy == "hnsw_iterative" and K < filtered.fetch < iterative.fetch


def test_a_table_one_walk_covers_asks_the_iterative_scan_for_no_more_than_the_rows_wanted():
    plan = plan_for(100_000, 100_000, K, iterative=True)
    assert plan.strategy == "hnsw_iterative" and plan.fetch == K and plan.ef_search is not None
    assert plan.ef_search < MAX_EF_SEARCH
