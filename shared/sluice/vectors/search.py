"""Candidate retrieval over one collection table (R-SRCH-1..3).

The vector top ``limit`` by cosine among the rows in scope, each with its
Postgres full-text rank; how candidates are then weighed, gated and deduplicated
is the search's policy (``sluice.search.ranking``), not this layer's.

Scope before top-k (R-SRCH-3). The scope (the caller's resolved bases and their
tenants) and the filters are one WHERE clause inside the query that computes the
top-k. That alone is not enough: pgvector's HNSW index walks the graph for
``hnsw.ef_search`` nearest rows and filters them *afterwards*, so a filter that
keeps 0.5% of the table leaves ~0.2 of the default 40 rows, and the "top-k" is
short or wrong. So the plan is chosen per query from the size of the scope:

* ``exact``: few rows in scope, a scope too selective for the graph to find
  enough of them, or one small enough that scoring it costs less than
  walking the graph as far as its selectivity needs: the distance is computed for every row in scope (found
  through the btree indexes), which is exact by construction and cheap exactly
  when the scope is small.
* ``hnsw``: the graph, with ``ef_search`` raised so the rows it visits hold
  ``OVERFETCH`` times the rows asked for at the scope's selectivity, and
  never below what the table's size needs (``graph_ef``: a graph over more
  rows needs a longer walk for the same recall); on pgvector >= 0.8
  (``hnsw_iterative``) also ``hnsw.iterative_scan``, so a shortfall is
  refilled by the server rather than returned short. When the ef needed
  exceeds what pgvector allows (1000), the scope is narrow enough that the
  exact scan is the cheaper of the two anyway, so the plan is ``exact``.
  Past about 1M rows in one collection the cap also holds the unfiltered
  walk at 1000, and recall slowly falls below 0.95 (not measured beyond 1M).

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

import numpy as np
from pgvector import Vector
from psycopg import sql
from psycopg.rows import dict_row

from sluice.db.connection import Connection
from sluice.vectors.names import table_ident, table_name
from sluice.vectors.store import table_exists

# A scope this small is always scored exactly, whatever the graph would cost.
EXACT_SCAN_ROWS = 1_000
# Scoring a row exactly costs about 1/8 of what raising ef_search by one does (2 cores, 384-d,
# bench/search_latency.py: ~2 ms per 1,000 rows in scope against ~15 ms per 1,000 of ef).
EXACT_ROWS_PER_EF = 8
# The graph is asked for this many times the rows needed at the scope's selectivity.
OVERFETCH = 4
# Never below this ef_search: pgvector's default of 40 misses neighbours on 384-d data.
MIN_EF_SEARCH = 200
# pgvector refuses a larger hnsw.ef_search.
MAX_EF_SEARCH = 1000
# A graph over more rows needs a longer walk for the same recall. bench/search_latency.py, 384-d,
# pgvector's default build (m 16, ef_construction 64), recall@10 unfiltered: 100,000 rows reach
# 0.97 at ef 200; 1,000,000 rows 0.93 at 200, 0.96 at 600-800 and 0.97 at 1,000. So the floor
# grows from MIN_EF_SEARCH at GRAPH_EF_BASE_ROWS by 5x per 10x rows, reaching MAX_EF_SEARCH at 1M.
GRAPH_EF_BASE_ROWS = 100_000
GRAPH_EF_GROWTH = math.log10(5)
# Tuples an iterative scan (pgvector >= 0.8) may visit before it gives up.
MAX_SCAN_TUPLES = 200_000

Strategy = Literal["exact", "hnsw", "hnsw_iterative"]


@dataclass(frozen=True)
class BaseScope:
    """One knowledge base the caller reaches, as resolved: its id and its tenant."""

    kb_id: uuid.UUID
    org_id: str | None


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
    text_score: float = 0.0
    # Set by the search service when the deployment has a reranker (sluice.search.ranking).
    reranker_score: float | None = None
    document_date: date | None = None


@dataclass(frozen=True)
class Plan:
    strategy: Strategy
    rows_in_scope: int | None  # the planner's estimate
    selectivity: float
    ef_search: int | None = None


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
    parts: list[sql.Composable] = [sql.SQL("kb_id = ANY(%(scope_kb_ids)s)")]
    params: dict[str, Any] = {"scope_kb_ids": sorted({b.kb_id for b in scope})}
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


# --- choosing the plan ------------------------------------------------------------------------


def vector_extension_version(conn: Connection) -> tuple[int, ...]:
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return _version(_one(row) if row is not None else None)


def _version(text: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in str(text or "0").split(".") if p.isdigit())


def has_iterative_scan(conn: Connection) -> bool:
    return vector_extension_version(conn) >= (0, 8)


def _one(row: Any) -> Any:
    return next(iter(row.values())) if isinstance(row, dict) else row[0]


@dataclass(frozen=True)
class TableFacts:
    present: bool
    rows: float  # the planner's count (reltuples), or its estimate from pages before the first ANALYZE
    iterative_scan: bool


def table_facts(conn: Connection, collection: str) -> TableFacts:
    """Whether the table exists, about how many rows it holds, and the server's pgvector: one round trip."""
    values = conn.cursor(row_factory=dict_row).execute(
        """SELECT to_regclass(%(t)s) IS NOT NULL AS present,
                  (SELECT reltuples::float8 FROM pg_class WHERE oid = to_regclass(%(t)s)) AS reltuples,
                  (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS version""",
        {"t": table_name(collection)},
    ).fetchone()
    if values is None or not values["present"]:
        return TableFacts(False, 0.0, False)
    rows = float(values["reltuples"])
    if rows < 0:  # never analyzed: the planner's own estimate from the table's size
        rows = _estimated_rows(conn, collection, sql.SQL("true"), {})
    return TableFacts(True, rows, _version(values["version"]) >= (0, 8))


def _estimated_rows(conn: Connection, collection: str, where: sql.Composable, params: dict[str, Any]) -> float:
    query = sql.SQL("EXPLAIN (FORMAT JSON) SELECT 1 FROM {t} WHERE ").format(t=table_ident(collection)) + where
    row = conn.execute(query, params).fetchone()
    plan = _one(row)
    if isinstance(plan, str):
        plan = json.loads(plan)
    return float(plan[0]["Plan"]["Plan Rows"])


def graph_ef(table_rows: float) -> int:
    """The ``ef_search`` a graph over ``table_rows`` rows needs for its top 10 unfiltered (at most pgvector's cap)."""
    if table_rows <= GRAPH_EF_BASE_ROWS:
        return MIN_EF_SEARCH
    return min(MAX_EF_SEARCH, int(math.ceil(MIN_EF_SEARCH * (table_rows / GRAPH_EF_BASE_ROWS) ** GRAPH_EF_GROWTH)))


def choose_plan(conn: Connection, collection: str, where: sql.Composable, params: dict[str, Any],
                limit: int, *, iterative: bool, exact_rows: int | None = None, table_rows: float | None = None
                ) -> Plan:
    exact_rows = EXACT_SCAN_ROWS if exact_rows is None else exact_rows
    if table_rows is None:
        table_rows = table_facts(conn, collection).rows
    total = max(table_rows, 1.0)
    # The planner's estimate, not a count: counting a scope of a few thousand rows costs as much as
    # scanning it. A wrong estimate costs time, never rows: too low and the exact scan is slower
    # than needed; too high and a short graph answer is redone exactly (vector_candidates).
    estimate = _estimated_rows(conn, collection, where, params)
    selectivity = min(1.0, max(estimate, 1.0) / total)
    needed_ef = math.ceil(limit * OVERFETCH / selectivity)
    ef = max(graph_ef(total), limit * 2, needed_ef)
    # Exact when the graph cannot be asked for enough rows (ef is capped by pgvector; an iterative
    # scan on 0.8 could go on, but only by visiting more tuples than the scope holds rows), or when
    # scoring the scope costs less than walking the graph that far.
    if ef > MAX_EF_SEARCH or estimate <= max(exact_rows, EXACT_ROWS_PER_EF * ef):
        return Plan("exact", round(estimate), selectivity)
    # On pgvector >= 0.8 the same ef, plus the server refilling a short answer by walking further.
    return Plan("hnsw_iterative" if iterative else "hnsw", round(estimate), selectivity, ef)


# --- the candidate query ----------------------------------------------------------------------

_COLUMNS = """id, document_id, kb_id, chunk_index, content, filename, page_start, page_end, source,
           document_type, organizational_unit, document_date, source_path, metadata, content_tsv"""

# `+ 0` keeps the ORDER BY from matching the HNSW index, so the rows in scope are
# found through the btree indexes and every one of them is scored: an exact top-k.
_ORDER = {
    "exact": "(embedding <=> %(vec)s) + 0",
    "hnsw": "embedding <=> %(vec)s",
    "hnsw_iterative": "embedding <=> %(vec)s",
}

_CANDIDATES = """
WITH q AS (
    SELECT replace(plainto_tsquery('simple', %(text)s)::text, '&', '|') AS terms
), hits AS MATERIALIZED (
    SELECT {columns}, embedding <=> %(vec)s AS distance
      FROM {t}
     WHERE {where}
     ORDER BY {order}
     LIMIT %(limit)s
)
SELECT hits.*, 1 - hits.distance AS vec_score,
       CASE WHEN q.terms = '' THEN 0.0 ELSE ts_rank(hits.content_tsv, q.terms::tsquery) END AS text_score
  FROM hits CROSS JOIN q
 ORDER BY hits.distance, hits.id
"""


def candidate_query(collection: str, where: sql.Composable, strategy: Strategy) -> sql.Composed:
    return sql.SQL(_CANDIDATES).format(
        columns=sql.SQL(_COLUMNS), t=table_ident(collection), where=where, order=sql.SQL(_ORDER[strategy])
    )


def _apply_plan(conn: Connection, plan: Plan) -> None:
    # set_config(..., true) lasts until the end of the caller's transaction, like SET LOCAL.
    if plan.strategy == "hnsw_iterative":
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true), "
                     "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                     "set_config('hnsw.max_scan_tuples', %s, true)",
                     (str(plan.ef_search), str(MAX_SCAN_TUPLES)))
    elif plan.ef_search is not None:
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(plan.ef_search),))


def vector_candidates(
    conn: Connection,
    collection: str,
    *,
    vector: Sequence[float],
    text: str,
    scope: Sequence[BaseScope],
    limit: int,
    filters: ChunkFilter = NO_FILTER,
    strategy: Strategy | None = None,
) -> tuple[list[Candidate], Plan]:
    """The ``limit`` rows in scope nearest ``vector``, each with its full-text rank for ``text``.

    ``strategy`` forces a plan (the benchmarks and the recall test use it); by
    default it is chosen from the size of the scope.
    """
    facts = table_facts(conn, collection) if scope else TableFacts(False, 0.0, False)
    if not facts.present:
        return [], Plan("exact", 0, 0.0)
    where, params = scope_clause(scope, filters)
    if strategy is None:
        plan = choose_plan(conn, collection, where, params, limit, iterative=facts.iterative_scan,
                           table_rows=facts.rows)
    else:
        plan = Plan(strategy, None, 1.0, MAX_EF_SEARCH if strategy != "exact" else None)
    params = {**params, "vec": Vector(np.asarray(vector, dtype=np.float32)), "text": text, "limit": limit}
    _apply_plan(conn, plan)
    cur = conn.cursor(row_factory=dict_row)
    rows = cur.execute(candidate_query(collection, where, plan.strategy), params).fetchall()
    if len(rows) < limit and plan.strategy != "exact" and strategy is None:
        # The graph came back short: either the scope holds fewer rows, or it missed some. Exact settles it.
        plan = Plan("exact", None, plan.selectivity)
        rows = cur.execute(candidate_query(collection, where, "exact"), params).fetchall()
    return [_candidate(collection, r) for r in rows], plan


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
    )


def organizational_units(conn: Connection, collection: str, scope: Sequence[BaseScope]) -> list[str]:
    """R-SRCH-5: the units actually present among the rows in scope; a blank is no unit."""
    if not scope or not table_exists(conn, collection):
        return []
    where, params = scope_clause(scope)
    query = (sql.SQL("SELECT DISTINCT organizational_unit AS unit FROM {t} WHERE ").format(t=table_ident(collection))
             + where + sql.SQL(" AND organizational_unit IS NOT NULL AND btrim(organizational_unit) <> ''"
                               " ORDER BY 1"))
    return [_one(r) for r in conn.execute(query, params).fetchall()]
