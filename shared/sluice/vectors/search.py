"""Candidate retrieval over one collection table (R-SRCH-1..3, R-SRCH-7).

The pool is the union of the vector top ``limit`` by cosine and the lexical top
``limit`` by BM25 in the collection's language (``sluice.vectors.fulltext``),
both among the rows in scope; every candidate carries both scores (a text-only
candidate's cosine is computed for it) and which side found it. How candidates are
then weighed, gated and deduplicated is the search's policy
(``sluice.search.ranking``), not this layer's.

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
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from psycopg import sql
from psycopg.rows import dict_row

from sluice.db.connection import Connection
from sluice.db.migrations import version_tuple
from sluice.vectors.bounds import bounded
from sluice.vectors.fulltext import (
    DEFAULT_LANGUAGE,
    NO_TEXT,
    Documents,
    TextQuery,
    language_of_expression,
    quoted,
    text_query,
)
from sluice.vectors.names import index_name, table_ident, table_name
from sluice.vectors.store import IndexKind, as_vector, table_exists

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
class BaseScope:
    """One knowledge base the caller reaches, as resolved: its id and its tenant.

    ``recipient``: the caller reaches only the documents of this base shared with
    that user in its tenant (a recipients base, R-ACC-6), checked in the same WHERE.
    """

    kb_id: uuid.UUID
    org_id: str | None
    recipient: str | None = None


@dataclass(frozen=True)
class ChunkFilter:
    """R-SRCH-2: OR within a dimension, AND across; ``None`` means not filtered.

    A chunk with no value for a filtered dimension never matches (NULL fails
    ``= ANY`` and every comparison), so a filter never widens the scope.
    """

    sources: tuple[str, ...] | None = None
    document_types: tuple[str, ...] | None = None
    organizational_units: tuple[str, ...] | None = None
    date_from: date | None = None
    date_to: date | None = None
    document_ids: tuple[uuid.UUID, ...] | None = None

    def describe(self) -> dict[str, Any]:
        """The filter as logged: which dimensions and how many values, no values themselves."""
        out: dict[str, Any] = {}
        for name in ("sources", "document_types", "organizational_units", "document_ids"):
            values = getattr(self, name)
            if values is not None:
                out[name] = len(values)
        if self.date_from:
            out["date_from"] = self.date_from.isoformat()
        if self.date_to:
            out["date_to"] = self.date_to.isoformat()
        return out


NO_FILTER = ChunkFilter()


@dataclass
class Candidate:
    collection: str
    chunk_id: int
    document_id: uuid.UUID
    kb_id: uuid.UUID | None
    chunk_index: int
    content: str
    filename: str | None
    page_start: int | None
    page_end: int | None
    source: str | None
    document_type: str | None
    organizational_unit: str | None
    source_path: str | None
    metadata: dict[str, Any]
    vec_score: float
    text_score: float = 0.0  # BM25 (0: no lexeme of the query)
    # Set by the search service when the deployment has a reranker (sluice.search.ranking).
    reranker_score: float | None = None
    document_date: date | None = None
    # Which side of the pool found it: "vector", "text", or both (the diagnostic view shows it).
    found_by: tuple[str, ...] = ("vector",)
    # Holds every lexeme of the query (stop words aside) and was found by the lexical side (R-SRCH-1).
    strong_match: bool = False
    # Set by sluice.search.ranking: both scores normalised within the collection's pool, their
    # convex combination, and the cosine floor of the collection's model or the request's (None: the
    # spec's default).
    vec_norm: float = 0.0
    text_norm: float = 0.0
    hybrid_score: float = 0.0
    vec_gate: float | None = None
    # The query's BM25 scale in this collection (TextQuery.bound), and how many of the query's rare
    # identifiers (TextQuery.rare_identifiers) the chunk holds: what the ranking's fusion and its
    # identifier rule read (R-SRCH-10).
    text_bound: float = 0.0
    identifier_hits: int = 0
    # Set by sluice.search.ranking: it ranks above a candidate of higher fused score because it holds
    # more of the query's rare identifiers (the diagnostic view says so).
    lifted_by_identifier: bool = False


@dataclass(frozen=True)
class Plan:
    strategy: Strategy
    rows_in_scope: int | None  # the planner's estimate
    selectivity: float
    ef_search: int | None = None
    fetch: int = 0  # rows asked of the index, re-ordered exactly; at least the rows asked for
    max_scan_tuples: int = 0  # hnsw_iterative: where the server stops walking


# --- the WHERE clause: scope, then filters ------------------------------------------------------


def scope_clause(scope: Sequence[BaseScope], flt: ChunkFilter = NO_FILTER) -> tuple[sql.Composable, dict[str, Any]]:
    """The rows a caller may see and asked for: a resolved base, its tenant, then R-SRCH-2.

    The base alone decides; the tenant is checked beside it so that a chunk
    stamped with another tenant is never read even under a base id it names.
    A base with no tenant (app scope, or a personal base outside any
    organization) matches chunks with no tenant stamped, never "any tenant".
    """
    tenants = sorted({b.org_id for b in scope if b.org_id is not None})
    allow_untenanted = any(b.org_id is None for b in scope)
    whole = sorted({b.kb_id for b in scope if b.recipient is None})
    shared = [b for b in scope if b.recipient is not None]
    params: dict[str, Any] = {"scope_kb_ids": whole}
    bases: list[sql.Composable] = [sql.SQL("kb_id = ANY(%(scope_kb_ids)s)")]
    for i, b in enumerate(shared):
        # R-ACC-6: a recipients base reaches only the documents shared with the caller in its tenant.
        # A semi-join on the recipients table in the WHERE both sides of the pool share, so it holds
        # before either top-k is taken (R-SRCH-3).
        bases.append(sql.SQL(
            "(kb_id = %({k})s AND org_id = %({o})s AND document_id IN ("
            "SELECT r.document_id FROM document_recipients r WHERE r.user_id = %({u})s AND r.org_id = %({o})s))"
        ).format(k=sql.SQL(f"scope_shared_kb_{i}"), o=sql.SQL(f"scope_shared_org_{i}"),
                 u=sql.SQL(f"scope_shared_user_{i}")))
        params[f"scope_shared_kb_{i}"] = b.kb_id
        params[f"scope_shared_org_{i}"] = b.org_id
        params[f"scope_shared_user_{i}"] = b.recipient
    parts: list[sql.Composable] = [
        bases[0] if len(bases) == 1 else sql.SQL("(") + sql.SQL(" OR ").join(bases) + sql.SQL(")")]
    tenant_checks: list[sql.Composable] = []
    if tenants:
        tenant_checks.append(sql.SQL("org_id = ANY(%(scope_tenants)s)"))
        params["scope_tenants"] = tenants
    if allow_untenanted:
        tenant_checks.append(sql.SQL("org_id IS NULL"))
    parts.append(sql.SQL("(") + sql.SQL(" OR ").join(tenant_checks) + sql.SQL(")"))
    for column, values, key in (
        ("source", flt.sources, "f_sources"),
        ("document_type", flt.document_types, "f_document_types"),
        ("organizational_unit", flt.organizational_units, "f_units"),
        ("document_id", flt.document_ids, "f_document_ids"),
    ):
        if values is not None:
            parts.append(sql.SQL("{c} = ANY(%({k})s)").format(c=sql.Identifier(column), k=sql.SQL(key)))
            params[key] = list(values)
    if flt.date_from is not None:
        parts.append(sql.SQL("document_date >= %(f_date_from)s"))
        params["f_date_from"] = flt.date_from
    if flt.date_to is not None:
        parts.append(sql.SQL("document_date <= %(f_date_to)s"))
        params["f_date_to"] = flt.date_to
    return sql.SQL(" AND ").join(parts), params


def statistics_scope(scope: Sequence[BaseScope]) -> tuple[list[uuid.UUID], Documents | None]:
    """What the lexical statistics of ``scope`` count (R-SRCH-9): the bases reached whole, and the WHERE
    of the documents a shared pool's reader reaches in the others (None: no such base)."""
    whole = sorted({b.kb_id for b in scope if b.recipient is None})
    shared = [b for b in scope if b.recipient is not None and b.kb_id not in whole]
    return whole, (scope_clause(shared) if shared else None)


# --- choosing the plan ------------------------------------------------------------------------


def supports_iterative_scan(version: tuple[int, ...]) -> bool:
    return version >= ITERATIVE_SCAN_VERSION


def _one(row: Any) -> Any:
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
    plan = _one(row)
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


# --- the candidate query ----------------------------------------------------------------------

_COLUMNS = """id, c.document_id, c.kb_id, c.chunk_index, c.content, c.filename, c.page_start, c.page_end,
           c.source, c.document_type, c.organizational_unit, c.document_date, c.source_path, c.metadata"""

# The exact plan: `+ 0` keeps the ORDER BY from matching the HNSW index, so the rows in scope are
# found through the btree indexes and every one of them is scored: an exact top-k.
_EXACT_ORDER = sql.SQL("(embedding <=> %(vec)s) + 0")
_VECTOR_ORDER = sql.SQL("embedding <=> %(vec)s")
# A halfvec index is an expression index: the ORDER BY must be that expression for the planner to use it.
_HALFVEC_ORDER = "embedding::halfvec({d}) <=> %(vec)s::halfvec({d})"

# `nearest` takes the first `fetch` rows the index yields (only ids: an iterative walk may yield
# thousands); `vector_side` orders them by the full-precision distance, which both a relaxed-order
# scan and a halfvec index need, and keeps `limit`. `text_side` is the lexical (BM25) top `limit` of the
# same scope (the GIN index, then the rank). Only the pool's rows are read whole, and each is scored
# both ways: a text-only candidate's cosine is one more distance.
_CANDIDATES = """
WITH nearest AS MATERIALIZED (
    SELECT id, embedding <=> %(vec)s AS distance
      FROM {t}
     WHERE {where}
     ORDER BY {order}
     LIMIT %(fetch)s
), vector_side AS (
    SELECT id FROM nearest ORDER BY distance, id LIMIT %(limit)s
){text_side}, pool AS (
    SELECT id, bool_or(side = 'vector') AS by_vector, bool_or(side = 'text') AS by_text
      FROM ({sides}) AS found
     GROUP BY id
)
SELECT {columns}, 1 - (c.embedding <=> %(vec)s) AS vec_score, {text_score} AS text_score,
       pool.by_vector, pool.by_text, {strong} AS strong
  FROM pool JOIN {t} AS c USING (id)
 ORDER BY vec_score DESC, id
"""
_TEXT_SIDE = """, text_side AS MATERIALIZED (
    SELECT id FROM {t}
     WHERE {where} AND content_tsv @@ %(tsq)s::tsquery
     ORDER BY {score} DESC, id
     LIMIT %(limit)s
)"""
_VECTOR_ONLY = "SELECT id, 'vector' AS side FROM vector_side"
_BOTH = _VECTOR_ONLY + " UNION ALL SELECT id, 'text' FROM text_side"


def candidate_query(collection: str, where: sql.Composable, strategy: Strategy, index: IndexKind = "vector",
                    dim: int = 0, *, lexical: TextQuery = NO_TEXT) -> sql.Composed:
    """The candidate query of ``strategy`` against a table whose HNSW index is of ``index`` over ``dim``;
    with the lexical side of ``lexical`` (parameters ``tsq`` and ``every``) when it has one."""
    if strategy == "exact":
        order: sql.Composable = _EXACT_ORDER
    elif index == "halfvec":
        order = sql.SQL(_HALFVEC_ORDER).format(d=sql.Literal(int(dim)))
    else:
        order = _VECTOR_ORDER
    t = table_ident(collection)
    text = lexical.tsquery is not None
    if text:
        text_side: sql.Composable = sql.SQL(_TEXT_SIDE).format(
            t=t, where=where, score=lexical.score(sql.Identifier("content_tsv")))
        text_score: sql.Composable = lexical.score(sql.SQL("c.content_tsv"))
        strong: sql.Composable = sql.SQL("(pool.by_text AND c.content_tsv @@ %(every)s::tsquery)")
    else:
        text_side, text_score, strong = sql.SQL(""), sql.SQL("0.0"), sql.SQL("false")
    return sql.SQL(_CANDIDATES).format(columns=sql.SQL(_COLUMNS), t=t, where=where, order=order,
                                       text_side=text_side, sides=sql.SQL(_BOTH if text else _VECTOR_ONLY),
                                       text_score=text_score, strong=strong)


def _apply_plan(conn: Connection, plan: Plan, iterative_server: bool) -> None:
    # set_config(..., true) lasts until the end of the caller's transaction, like SET LOCAL; a search
    # of several collections runs in one transaction, so each graph plan sets every knob it relies on.
    if plan.strategy == "hnsw_iterative":
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true), "
                     "set_config('hnsw.iterative_scan', %s, true), "
                     "set_config('hnsw.max_scan_tuples', %s, true)",
                     (str(plan.ef_search), ITERATIVE_ORDER, str(plan.max_scan_tuples)))
    elif plan.strategy == "hnsw" and iterative_server:
        # The plan for pgvector < 0.8, forced on a server that has iterative scans: one walk, as 0.6 does.
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'off', true)",
                     (str(plan.ef_search),))
    elif plan.ef_search is not None:
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(plan.ef_search),))


def find_candidates(
    conn: Connection,
    collection: str,
    *,
    vector: Sequence[float],
    text: str,
    scope: Sequence[BaseScope],
    limit: int,
    filters: ChunkFilter = NO_FILTER,
    strategy: Strategy | None = None,
    iterative: bool | None = None,
    common_rows: int | None = None,
) -> tuple[list[Candidate], Plan]:
    """The pool for one collection: the ``limit`` rows in scope nearest ``vector`` and the ``limit``
    rows in scope with the highest BM25 for ``text``, each with both scores (R-SRCH-1).

    ``strategy`` forces the vector side's plan; ``iterative=False`` plans as for a pgvector without
    iterative scans (< 0.8) whatever the server has; ``common_rows`` replaces ``COMMON_LEXEME_ROWS``.
    The benchmarks and tests use them; by default the plan is chosen from the size of the scope and
    the database's pgvector.
    """
    with bounded(conn):
        return _find_candidates(conn, collection, vector=vector, text=text, scope=scope, limit=limit,
                                filters=filters, strategy=strategy, iterative=iterative, common_rows=common_rows)


def _find_candidates(conn: Connection, collection: str, *, vector: Sequence[float], text: str,
                     scope: Sequence[BaseScope], limit: int, filters: ChunkFilter, strategy: Strategy | None,
                     iterative: bool | None, common_rows: int | None) -> tuple[list[Candidate], Plan]:
    facts = table_facts(conn, collection) if scope else TableFacts(False, 0.0, False)
    if not facts.present:
        return [], Plan("exact", 0, 0.0)
    if iterative is None or not facts.iterative_scan:
        iterative = facts.iterative_scan
    where, params = scope_clause(scope, filters)
    if strategy is None and any(b.recipient is not None for b in scope):
        # R-ACC-6: a recipient reaches at most their private pool's cap of documents in a shared pool, so
        # scoring them all is exact and cheap (found through the document btree), whatever the planner
        # estimates for the semi-join; a graph walk would filter a tiny fraction of a large table.
        plan = Plan("exact", None, 1.0)
    elif strategy is None:
        plan = choose_plan(conn, collection, where, params, limit, iterative=iterative, table_rows=facts.rows)
    elif strategy == "exact":
        plan = Plan("exact", None, 1.0)
    else:
        if strategy == "hnsw_iterative" and not facts.iterative_scan:
            raise ValueError(f"pgvector {'.'.join(map(str, ITERATIVE_SCAN_VERSION))} or later is needed for "
                             "hnsw_iterative")
        # Forced: the longest single walk; the iterative scan asked for no more than the rows wanted.
        plan = Plan(strategy, None, 1.0, MAX_EF_SEARCH, fetch=limit,
                    max_scan_tuples=MAX_SCAN_TUPLES if strategy == "hnsw_iterative" else 0)
    lexical = text_query(conn, collection, facts.language, text, *statistics_scope(scope), common_rows=common_rows)
    params = {**params, "vec": as_vector(vector), "tsq": lexical.tsquery, "every": lexical.every_lexeme,
              "limit": limit, "fetch": max(limit, plan.fetch)}
    _apply_plan(conn, plan, facts.iterative_scan)
    cur = conn.cursor(row_factory=dict_row)
    query = candidate_query(collection, where, plan.strategy, facts.index, facts.dim, lexical=lexical)
    rows = cur.execute(query, params).fetchall()
    if sum(r["by_vector"] for r in rows) < limit and plan.strategy != "exact" and strategy is None:
        # The graph came back short: either the scope holds fewer rows, or it missed some. Exact settles it.
        plan = Plan("exact", None, plan.selectivity)
        query = candidate_query(collection, where, "exact", lexical=lexical)
        rows = cur.execute(query, {**params, "fetch": limit}).fetchall()
    found = [_candidate(collection, r) for r in rows]
    hits = _identifier_hits(conn, collection, [c.chunk_id for c in found], lexical.rare_identifiers)
    for c in found:
        c.text_bound = lexical.bound
        c.identifier_hits = hits.get(c.chunk_id, 0)
    return found, plan


def _identifier_hits(conn: Connection, collection: str, ids: Sequence[int], identifiers: Sequence[str]
                     ) -> dict[int, int]:
    """How many of ``identifiers`` each chunk of ``ids`` holds (only the pool's rows, by primary key)."""
    if not ids or not identifiers:
        return {}
    held = sql.SQL(" + ").join(
        sql.SQL("(content_tsv @@ {q}::tsquery)::int").format(q=sql.Literal(quoted(lx))) for lx in identifiers)
    query = sql.SQL("SELECT id, {held} AS hits FROM {t} WHERE id = ANY(%s)").format(
        held=held, t=table_ident(collection))
    return {r["id"]: int(r["hits"]) for r in conn.execute(query, (list(ids),)).fetchall()}


def _candidate(collection: str, r: dict[str, Any]) -> Candidate:
    return Candidate(
        collection=collection,
        chunk_id=r["id"],
        document_id=r["document_id"],
        kb_id=r["kb_id"],
        chunk_index=r["chunk_index"],
        content=r["content"],
        filename=r["filename"],
        page_start=r["page_start"],
        page_end=r["page_end"],
        source=r["source"],
        document_type=r["document_type"],
        organizational_unit=r["organizational_unit"],
        source_path=r["source_path"],
        metadata=r["metadata"] or {},
        vec_score=float(r["vec_score"]),
        text_score=float(r["text_score"]),
        document_date=r["document_date"],
        found_by=tuple(side for side, hit in (("vector", r["by_vector"]), ("text", r["by_text"])) if hit),
        strong_match=bool(r["strong"]),
    )


def organizational_units(conn: Connection, collection: str, scope: Sequence[BaseScope]) -> list[str]:
    """R-SRCH-5: the units actually present among the rows in scope; a blank is no unit."""
    if not scope or not table_exists(conn, collection):
        return []
    where, params = scope_clause(scope)
    query = (sql.SQL("SELECT DISTINCT organizational_unit AS unit FROM {t} WHERE ").format(t=table_ident(collection))
             + where + sql.SQL(" AND organizational_unit IS NOT NULL AND btrim(organizational_unit) <> ''"
                               " ORDER BY 1"))
    with bounded(conn):
        return [_one(r) for r in conn.execute(query, params).fetchall()]
