"""The search service: resolve scope, embed the query once per embedding space, rank (R-SRCH-1..6).

Every collection named is resolved through its knowledge-base rows before the
first vector is read; one out of reach refuses the whole search (R-ACC-3). The
scope handed to the vector query is built from those resolved rows only: the
body has no field that names a tenant or a base (R-SRCH-3).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from sluice.access import resolve_collection
from sluice.access.shared import search_scope
from sluice.db import knowledge_bases as kb_repo
from sluice.db.connection import Connection
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.embedding import Embedder, EmbeddingSpec
from sluice.embedding.catalog import vec_gate
from sluice.embedding.rerank import Reranker
from sluice.errors import CollectionNotFoundError, ValidationError
from sluice.identity import Principal
from sluice.search.ranking import ALPHA, DEFAULT_VEC_GATE, RERANK_GATE, order, rank, score
from sluice.vectors.names import validate_collection_name
from sluice.vectors.search import (
    NO_FILTER,
    BaseScope,
    Candidate,
    ChunkFilter,
    Plan,
    find_candidates,
    organizational_units,
)

log = logging.getLogger("sluice.search")

QUERY_LOG_CHARS = 120
DIAGNOSTIC_CANDIDATES = 20

FilterValue = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)]


class SearchFilters(BaseModel):
    """R-SRCH-2. A list given must hold at least one value: an empty one is refused, not read as "all"."""

    model_config = ConfigDict(extra="forbid")

    source: list[FilterValue] | None = Field(None, min_length=1, max_length=100)
    document_type: list[FilterValue] | None = Field(None, min_length=1, max_length=100)
    organizational_unit: list[FilterValue] | None = Field(None, min_length=1, max_length=100)
    date_from: date | None = None
    date_to: date | None = None

    @model_validator(mode="after")
    def _range(self) -> SearchFilters:
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise ValueError("date_from is after date_to")
        return self


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4000)
    collections: list[str] = Field(min_length=1, max_length=20)
    top_k: int = Field(4, ge=1, le=50)
    candidates: int = Field(8, ge=1, le=200)
    # R-SRCH-1: the fusion's weight on the vector side (0 lexical only, 1 vector only; default ALPHA)
    # and the cosine gate (default: the collection's model's vec_gate in the embedding catalog).
    alpha: float | None = Field(None, ge=0.0, le=1.0)
    min_vec_score: float | None = Field(None, ge=-1.0, le=1.0)
    filters: SearchFilters | None = None
    # Deprecated: only `parent_doc_id == "<id>"` was ever honoured; see legacy_document_filter.
    filter: str | None = Field(None, max_length=500)


class DiagnosticRequest(BaseModel):
    """The console search (R-SRCH-4): same scope and filters, a wider pool, no threshold."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4000)
    collections: list[str] = Field(min_length=1, max_length=20)
    alpha: float | None = Field(None, ge=0.0, le=1.0)
    min_vec_score: float | None = Field(None, ge=-1.0, le=1.0)
    filters: SearchFilters | None = None
    filter: str | None = Field(None, max_length=500)


_LEGACY_FILTER = re.compile(r'\s*parent_doc_id\s*==\s*"([^"]*)"\s*')


def legacy_document_filter(expression: str) -> uuid.UUID:
    """The one expression the old ``filter`` string ever meant; anything else is refused, not ignored."""
    match = _LEGACY_FILTER.fullmatch(expression)
    if match is None:
        raise ValidationError(
            "The filter string is deprecated and accepts only parent_doc_id == \"<id>\"; use filters instead",
            fields={"filter": 'Only parent_doc_id == "<id>" is accepted; use filters for anything else.'},
        )
    try:
        return uuid.UUID(match.group(1))
    except ValueError:
        raise ValidationError("parent_doc_id must be a document id",
                              fields={"filter": "parent_doc_id must be a document id."}) from None


def chunk_filter(filters: SearchFilters | None, legacy: str | None) -> ChunkFilter:
    if legacy is not None and filters is not None:
        raise ValidationError(
            "Use either filters or the deprecated filter string, not both",
            fields={"filter": "Give filters only; the filter string is deprecated."},
        )
    if legacy is not None:
        return ChunkFilter(document_ids=(legacy_document_filter(legacy),))
    if filters is None:
        return NO_FILTER

    def values(v: list[str] | None) -> tuple[str, ...] | None:
        return tuple(dict.fromkeys(v)) if v is not None else None

    return ChunkFilter(
        sources=values(filters.source),
        document_types=values(filters.document_type),
        organizational_units=values(filters.organizational_unit),
        date_from=filters.date_from,
        date_to=filters.date_to,
    )


@dataclass
class SearchOutcome:
    query: str
    results: list[Candidate]
    latency_ms: float
    plans: dict[str, Plan] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    alpha: float = ALPHA
    vec_gates: dict[str, float] = field(default_factory=dict)  # per collection, as applied

    @property
    def top_score(self) -> float | None:
        return score(self.results[0]) if self.results else None


BasesFor = Callable[[Connection, Principal, str], list[KnowledgeBase]]
EmbedderFor = Callable[[EmbeddingSpec], Embedder]


def operator_bases(conn: Connection, p: Principal, collection: str) -> list[KnowledgeBase]:
    """Every base holding the name: the operator's scope for ``sluice search`` run against the database."""
    validate_collection_name(collection, "collections")
    bases = kb_repo.by_collection(conn, collection)
    if not bases:
        raise CollectionNotFoundError()
    return bases


def gate_for(spec: EmbeddingSpec, min_vec_score: float | None) -> float:
    """The cosine gate of a collection embedded with ``spec``: the request's, else the catalog's for
    the model, else the spec's default (R-SRCH-1)."""
    if min_vec_score is not None:
        return min_vec_score
    gate = vec_gate(spec.provider, spec.model)
    return DEFAULT_VEC_GATE if gate is None else gate


def _gather(conn: Connection, p: Principal, collections: Sequence[str], query: str, flt: ChunkFilter,
            limit: int, embedder_for: EmbedderFor, bases_for: BasesFor | None,
            min_vec_score: float | None) -> tuple[list[Candidate], dict[str, Plan], dict[str, float]]:
    # Resolve every collection before touching any: one out of reach refuses all (R-ACC-3).
    if bases_for is None:
        scopes = {name: resolve_collection(conn, p, name, shared=True) for name in dict.fromkeys(collections)}
    else:
        scopes = {name: bases_for(conn, p, name) for name in dict.fromkeys(collections)}
    vectors: dict[EmbeddingSpec, list[float]] = {}
    found: list[Candidate] = []
    plans: dict[str, Plan] = {}
    gates: dict[str, float] = {}
    for name, bases in scopes.items():
        spec = bases[0].embedding_spec()
        gates[name] = gate_for(spec, min_vec_score)
        if spec not in vectors:
            vectors[spec] = embedder_for(spec).embed_query(query)
        # A recipients base is reached only as the caller's share; the operator reads every base whole.
        scope = search_scope(p, bases) if bases_for is None else [BaseScope(b.id, b.org_id) for b in bases]
        got, plans[name] = find_candidates(conn, name, vector=vectors[spec], text=query, scope=scope,
                                             limit=limit, filters=flt)
        for c in got:
            c.vec_gate = gates[name]
        found += got
    return found, plans, gates


def _rerank(reranker: Reranker | None, query: str, candidates: list[Candidate]) -> None:
    if reranker is None or not candidates:
        return
    scores = reranker.score(query, [c.content for c in candidates])
    for c, s in zip(candidates, scores, strict=True):
        c.reranker_score = s


def search(conn: Connection, p: Principal, req: SearchRequest,
           embedder_for: EmbedderFor, reranker: Reranker | None = None,
           bases_for: BasesFor | None = None) -> SearchOutcome:
    """``bases_for`` replaces the caller's resolution only for the operator's CLI (``operator_bases``)."""
    started = time.perf_counter()
    flt = chunk_filter(req.filters, req.filter)
    found, plans, gates = _gather(conn, p, req.collections, req.query, flt, req.candidates, embedder_for,
                                  bases_for, req.min_vec_score)
    _rerank(reranker, req.query, found)
    alpha = ALPHA if req.alpha is None else req.alpha
    results = rank(found, top_k=req.top_k, alpha=alpha)
    outcome = SearchOutcome(req.query, results, _since(started), plans, found, alpha, gates)
    log_search("search", outcome, flt, reranker)
    return outcome


def diagnostic(conn: Connection, p: Principal, req: DiagnosticRequest,
               embedder_for: EmbedderFor, reranker: Reranker | None = None,
               bases_for: BasesFor | None = None) -> SearchOutcome:
    """R-SRCH-4: the vector and lexical top 20 of every collection, every candidate kept, each with
    its verdict."""
    started = time.perf_counter()
    flt = chunk_filter(req.filters, req.filter)
    found, plans, gates = _gather(conn, p, req.collections, req.query, flt, DIAGNOSTIC_CANDIDATES, embedder_for,
                                  bases_for, req.min_vec_score)
    _rerank(reranker, req.query, found)
    alpha = ALPHA if req.alpha is None else req.alpha
    ordered = order(found, alpha)
    outcome = SearchOutcome(req.query, ordered, _since(started), plans, found, alpha, gates)
    log_search("search_diagnostic", outcome, flt, reranker)
    return outcome


def filter_values(conn: Connection, p: Principal, collection: str) -> list[str]:
    """R-SRCH-5: the organizational units present in the collection, under the caller's scope."""
    scope = search_scope(p, resolve_collection(conn, p, collection, shared=True))
    return organizational_units(conn, collection, scope)


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def log_search(event: str, outcome: SearchOutcome, flt: ChunkFilter, reranker: Reranker | None) -> None:
    """R-SRCH-6: what was asked (120 characters), how much came back, how good, how fast; never chunk text."""
    log.info(event, extra={
        "query_prefix": outcome.query[:QUERY_LOG_CHARS],
        "results": len(outcome.results),
        "candidates": len(outcome.candidates),
        "top_score": round(outcome.top_score, 6) if outcome.top_score is not None else None,
        "latency_ms": outcome.latency_ms,
        "alpha": outcome.alpha,
        "vec_gates": outcome.vec_gates,
        "reranker": reranker.name if reranker is not None else "none",
        "reranker_gate": RERANK_GATE if reranker is not None else None,
        "filters": flt.describe(),
        "plans": {name: plan.strategy for name, plan in outcome.plans.items()},
    })
