"""Candidate retrieval over one collection table (R-SRCH-1..3, R-SRCH-7).

The pool is the union of the vector top ``limit`` by cosine and the lexical top
``limit`` by BM25 in the collection's language (``sluice.vectors.fulltext``),
both among the rows in scope; every candidate carries both scores (a text-only
candidate's cosine is computed for it) and which side found it. How candidates are
then weighed, gated and deduplicated is the search's policy
(``sluice.search.ranking``), not this layer's.

The rows in scope and the filters are one WHERE clause (``sluice.vectors.scope``) inside both
sides' queries; how the vector side walks the graph is chosen per query (``sluice.vectors.plan``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from psycopg import sql
from psycopg.rows import dict_row

from sluice.db.connection import Connection
from sluice.vectors.bounds import bounded
from sluice.vectors.fulltext import NO_TEXT, TextQuery, quoted, text_query
from sluice.vectors.names import table_ident
from sluice.vectors.plan import (
    ITERATIVE_ORDER,
    ITERATIVE_SCAN_VERSION,
    MAX_EF_SEARCH,
    MAX_SCAN_TUPLES,
    Plan,
    Strategy,
    TableFacts,
    choose_plan,
    one,
    table_facts,
)
from sluice.vectors.scope import NO_FILTER, BaseScope, ChunkFilter, scope_clause, statistics_scope
from sluice.vectors.store import IndexKind, as_vector, table_exists

# The scope's types, re-exported: what a caller of find_candidates hands it.
__all__ = ["NO_FILTER", "BaseScope", "Candidate", "ChunkFilter", "Plan", "candidate_query", "find_candidates",
           "organizational_units"]


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
        return [one(r) for r in conn.execute(query, params).fetchall()]
