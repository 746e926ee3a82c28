"""How the vector side of a search finds its top-k among the rows in scope (R-SRCH-3).

The text side is exact by construction: the scope and filters are in its WHERE,
the GIN index finds the rows holding a query lexeme, and each is ranked. The
vector side is where the plan matters:

Scope before top-k (R-SRCH-3). The scope (the caller's resolved bases and their
tenants) and the filters are one WHERE clause inside the query that computes the
top-k. That alone is not enough: pgvector's HNSW index walks the graph for
``hnsw.ef_search`` nearest rows and filters them *afterwards*, so a filter that
keeps 0.5% of the table leaves ~0.2 of the default 40 rows, and the "top-k" is
short or wrong. So the plan is chosen per query from the size of the scope:

* ``exact``: few rows in scope, or a scope small enough that scoring it costs
  less than walking the graph as far as its selectivity needs: the distance is
  computed for every row in scope (found through the btree indexes), which is
  exact by construction and cheap exactly when the scope is small.
* ``hnsw_iterative`` (pgvector >= 0.8, what Aurora runs): the graph, walked
  until the rows visited hold ``OVERFETCH`` times the rows asked for at the
  scope's selectivity, and never less than the table's size needs
  (``graph_walk``: a graph over more rows needs a longer walk for the same
  recall). The first ``hnsw.ef_search`` (at most 1000) rows are one walk; a
  longer one is ``hnsw.iterative_scan`` carrying on, in relaxed order, until
  the rows in scope that the walk holds have come back; their exact distance
  then orders them. A filter is applied as the scan goes, so a shortfall is
  refilled by the server rather than returned short.
* ``hnsw`` (pgvector < 0.8): the same, but one walk of at most 1000 rows
  (``graph_ef``); a scope whose walk would be longer is scored ``exact``.
  At 1M rows the capped walk gives recall@10 0.93-0.97 depending on the build
  (bench/README.md), which the iterative plan's longer walk lifts.

Which plan a database can run is read from its ``vector`` extension version
(``table_facts``), and which index the table has (vector or halfvec) from its
catalog, so a table created before an upgrade is still searched through its
own index.

The size of the scope is the planner's estimate (an EXPLAIN, under a
millisecond): it only chooses between two correct plans' speeds. A graph scan
that still returns fewer rows than asked is redone exactly, so a search never
returns fewer rows than exist.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from psycopg import sql
from psycopg.rows import dict_row

from sluice.db.connection import Connection
from sluice.db.migrations import version_tuple
from sluice.vectors.fulltext import DEFAULT_LANGUAGE, language_of_expression
from sluice.vectors.names import index_name, table_ident, table_name
from sluice.vectors.store import IndexKind

# A scope this small is always scored exactly, whatever the graph would cost.
EXACT_SCAN_ROWS = 1_000
# Scoring a row exactly costs about 1/8 of what walking one more row of the graph does (2 cores,
# 384-d, bench/search_latency.py: ~2 ms per 1,000 rows in scope against ~15 ms per 1,000 of ef at
# 100,000 rows). At 1M rows on pgvector 0.8.6 the exact scan of 5% (50,000 rows) took p50 380 ms
# against 58 ms for the iterative walk of 4,000, and of 0.5% (5,000 rows) 12 ms: the rule puts
# the change between them (at 32,000 rows of 1M).
EXACT_ROWS_PER_EF = 8
# The graph is asked for this many times the rows needed at the scope's selectivity.
OVERFETCH = 4
# Never below this ef_search: pgvector's default of 40 misses neighbours on 384-d data.
MIN_EF_SEARCH = 200
# pgvector refuses a larger hnsw.ef_search.
MAX_EF_SEARCH = 1000
# A graph over more rows needs a longer walk for the same recall. bench/search_latency.py, 384-d,
# pgvector's default build (m 16, ef_construction 64), recall@10 unfiltered: 100,000 rows reach
# 0.97-0.99 at a walk of 200. 1,000,000 rows (pgvector 0.8.6, two graphs of the same rows, 100
# queries): a walk of 1,000 (the longest single walk) 0.951 and 0.969, 2,000 0.961 / 0.970, 3,000
# 0.961 / 0.970, 4,000 0.971 / 0.970, 6,000 0.973 / 0.974; at 5% selectivity 0.946 / 0.964 at
# 1,000 and 0.962 / 0.968 at 4,000. Graphs of the same rows differ by ~0.02 between builds, so
# the walk grows from MIN_EF_SEARCH at GRAPH_EF_BASE_ROWS by 20x per 10x rows, to 4,000 at 1M, where
# the weaker graph still holds 0.96. Not measured past 1M: the walk stops growing there.
GRAPH_EF_BASE_ROWS = 100_000
GRAPH_WALK_GROWTH = math.log10(20)
MAX_GRAPH_WALK = 4_000
# pgvector >= 0.8: iterative index scans. A walk longer than MAX_EF_SEARCH is one scan of
# ef_search 1000 that the server carries on until it has returned the rows asked for.
ITERATIVE_SCAN_VERSION = (0, 8)
# relaxed_order, re-sorted by the exact distance afterwards: at 1M, walk 4,000, recall@10 0.971
# unfiltered and 0.962 at 5%, against 0.951 and 0.933 with strict_order (which drops the rows
# found out of order) at the same cost.
ITERATIVE_ORDER = "relaxed_order"
# pgvector's default. At 1M, walk 4,000, recall was the same (0.971) with 20,000 and 200,000, and
# with scan_mem_multiplier 1 and 40: the rows past the first 1,000 come mostly from candidates
# the first walk already scored, not from walking further. It bounds the cost of a scope the
# estimate took for broad that holds few rows: the short answer is then redone exactly.
MAX_SCAN_TUPLES = 20_000

Strategy = Literal["exact", "hnsw", "hnsw_iterative"]


@dataclass(frozen=True)
class Plan:
    strategy: Strategy
    rows_in_scope: int | None  # the planner's estimate
    selectivity: float
    ef_search: int | None = None
    fetch: int = 0  # rows asked of the index, re-ordered exactly; at least the rows asked for
    max_scan_tuples: int = 0  # hnsw_iterative: where the server stops walking


def supports_iterative_scan(version: tuple[int, ...]) -> bool:
    return version >= ITERATIVE_SCAN_VERSION


def one(row: Any) -> Any:
    return next(iter(row.values()))


@dataclass(frozen=True)
class TableFacts:
    present: bool
    rows: float  # the planner's count (reltuples), or its estimate from pages before the first ANALYZE
    iterative_scan: bool  # the database's pgvector (its extversion) has iterative index scans
    index: IndexKind = "vector"  # what the table's HNSW index stores: the ORDER BY must match it
    dim: int = 0
    language: str = DEFAULT_LANGUAGE  # the text search configuration of its content_tsv column


def table_facts(conn: Connection, collection: str) -> TableFacts:
    """Whether the table exists, about how many rows it holds, its HNSW index and the database's
    pgvector: one round trip."""
    values = conn.cursor(row_factory=dict_row).execute(
        """SELECT to_regclass(%(t)s) IS NOT NULL AS present,
                  (SELECT reltuples::float8 FROM pg_class WHERE oid = to_regclass(%(t)s)) AS reltuples,
                  (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS version,
                  (SELECT atttypmod FROM pg_attribute
                    WHERE attrelid = to_regclass(%(t)s) AND attname = 'embedding') AS dim,
                  (SELECT o.opcname FROM pg_index x JOIN pg_opclass o ON o.oid = x.indclass[0]
                    WHERE x.indexrelid = to_regclass(%(i)s)) AS opclass,
                  (SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
                     JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                    WHERE d.adrelid = to_regclass(%(t)s) AND a.attname = 'content_tsv') AS tsv""",
        {"t": table_name(collection), "i": index_name(collection, "embedding_idx")},
    ).fetchone()
    if values is None or not values["present"]:
        return TableFacts(False, 0.0, False)
    rows = float(values["reltuples"])
    if rows < 0:  # never analyzed: the planner's own estimate from the table's size
        rows = _estimated_rows(conn, collection, sql.SQL("true"), {})
    index: IndexKind = "halfvec" if values["opclass"] == "halfvec_cosine_ops" else "vector"
    return TableFacts(True, rows, supports_iterative_scan(version_tuple(values["version"])), index,
                      int(values["dim"] or 0), language_of_expression(values["tsv"]))


def _estimated_rows(conn: Connection, collection: str, where: sql.Composable, params: dict[str, Any]) -> float:
    query = sql.SQL("EXPLAIN (FORMAT JSON) SELECT 1 FROM {t} WHERE ").format(t=table_ident(collection)) + where
    row = conn.execute(query, params).fetchone()
    plan = one(row)
    if isinstance(plan, str):
        plan = json.loads(plan)
    return float(plan[0]["Plan"]["Plan Rows"])


def graph_walk(table_rows: float) -> int:
    """The rows a walk of the graph over ``table_rows`` rows visits for its top 10 unfiltered."""
    if table_rows <= GRAPH_EF_BASE_ROWS:
        return MIN_EF_SEARCH
    return min(MAX_GRAPH_WALK, int(math.ceil(MIN_EF_SEARCH * (table_rows / GRAPH_EF_BASE_ROWS) ** GRAPH_WALK_GROWTH)))


def graph_ef(table_rows: float) -> int:
    """The ``ef_search`` of one walk over ``table_rows`` rows: ``graph_walk``, within pgvector's cap."""
    return min(MAX_EF_SEARCH, graph_walk(table_rows))


def plan_for(estimate: float, table_rows: float, limit: int, *, iterative: bool,
             exact_rows: int = EXACT_SCAN_ROWS) -> Plan:
    """The plan for a scope of about ``estimate`` rows in a table of ``table_rows``.

    ``iterative``: the database's pgvector has iterative index scans (>= 0.8). Without them the
    graph is used only when one walk of at most ``MAX_EF_SEARCH`` rows can hold the rows needed.
    """
    total = max(table_rows, 1.0)
    selectivity = min(1.0, max(estimate, 1.0) / total)
    # The walk that holds OVERFETCH times the rows needed at this selectivity, never shorter than
    # the table's size needs for its unfiltered top 10.
    graph = graph_walk(total) if iterative else graph_ef(total)
    walk = max(graph, limit * 2, math.ceil(limit * OVERFETCH / selectivity))
    # Exact when scoring the scope costs less than walking the graph that far; and, without
    # iterative scans, when one walk cannot be that long.
    if estimate <= max(exact_rows, EXACT_ROWS_PER_EF * walk) or (walk > MAX_EF_SEARCH and not iterative):
        return Plan("exact", round(estimate), selectivity)
    ef = min(walk, MAX_EF_SEARCH)
    if not iterative:
        return Plan("hnsw", round(estimate), selectivity, ef, fetch=limit)
    # Past one walk, the scan goes on until it has returned the rows in scope that a walk of
    # `walk` rows holds; the exact distance then orders them.
    fetch = limit if walk <= ef else max(limit, math.ceil(walk * selectivity))
    return Plan("hnsw_iterative", round(estimate), selectivity, ef, fetch=fetch, max_scan_tuples=MAX_SCAN_TUPLES)


def choose_plan(conn: Connection, collection: str, where: sql.Composable, params: dict[str, Any],
                limit: int, *, iterative: bool, exact_rows: int | None = None, table_rows: float | None = None
                ) -> Plan:
    if table_rows is None:
        table_rows = table_facts(conn, collection).rows
    # The planner's estimate, not a count: counting a scope of a few thousand rows costs as much as
    # scanning it. A wrong estimate costs time, never rows: too low and the exact scan is slower
    # than needed; too high and a short graph answer is redone exactly (find_candidates).
    estimate = _estimated_rows(conn, collection, where, params)
    return plan_for(estimate, table_rows, limit, iterative=iterative,
                    exact_rows=EXACT_SCAN_ROWS if exact_rows is None else exact_rows)
