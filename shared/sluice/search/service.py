"""The search service: resolve scope, embed the query once per embedding space, rank."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import psycopg
from pydantic import BaseModel, ConfigDict, Field

from sluice.access import resolve_collection
from sluice.embedding import EmbeddingSpec
from sluice.identity import Principal
from sluice.vectors.search import Candidate, rank, vector_candidates

log = logging.getLogger("sluice.search")


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4000)
    collections: list[str] = Field(min_length=1, max_length=20)
    top_k: int = Field(4, ge=1, le=50)
    candidates: int = Field(8, ge=1, le=200)


def _spec(kb: Any) -> EmbeddingSpec:
    return EmbeddingSpec(provider=kb.embedding_provider, model=kb.embedding_model, dim=kb.embedding_dim,
                         base_url=kb.embedding_base_url, secret_id=kb.embedding_secret_id)


def search(conn: psycopg.Connection, p: Principal, req: SearchRequest,
           embedder_for: Callable[[EmbeddingSpec], Any]) -> dict[str, Any]:
    started = time.perf_counter()
    # Resolve every collection before touching any: one out of reach refuses all (R-ACC-3).
    scopes = {name: resolve_collection(conn, p, name) for name in dict.fromkeys(req.collections)}
    vectors: dict[EmbeddingSpec, list[float]] = {}
    found: list[Candidate] = []
    for name, bases in scopes.items():
        spec = _spec(bases[0])
        if spec not in vectors:
            vectors[spec] = embedder_for(spec).embed_query(req.query)
        found += vector_candidates(conn, name, vector=vectors[spec], text=req.query,
                                   kb_ids=[b.id for b in bases], limit=req.candidates)
    results = rank(found, top_k=req.top_k)
    latency_ms = round((time.perf_counter() - started) * 1000, 1)
    log.info("search", extra={"query_prefix": req.query[:120], "results": len(results),
                              "top_score": results[0].score if results else None, "latency_ms": latency_ms})
    return {"query": req.query, "results": [result_body(c) for c in results], "count": len(results)}


def result_body(c: Candidate) -> dict[str, Any]:
    return {
        "content": c.content,
        "score": round(c.score, 6),
        "vec_score": round(c.vec_score, 6),
        "text_score": round(c.text_score, 6),
        "reranker_score": c.reranker_score,
        "collection": c.collection,
        "document_id": str(c.document_id),
        "kb_id": str(c.kb_id) if c.kb_id else None,
        "filename": c.filename,
        "chunk_index": c.chunk_index,
        "page_start": c.page_start,
        "page_end": c.page_end,
        "metadata": {
            "source": c.source,
            "document_type": c.document_type,
            "organizational_unit": c.organizational_unit,
            "source_path": c.source_path,
            **c.metadata,
        },
    }
