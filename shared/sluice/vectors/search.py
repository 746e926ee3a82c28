"""Hybrid retrieval over one collection table (R-SRCH-1).

The vector top ``candidates`` by cosine, scoped to the caller's bases before the
limit applies; Postgres full-text rank (``simple``) joined onto those
candidates; then the weighted order, the gate, and dedupe.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from sluice.vectors.names import table_ident
from sluice.vectors.store import table_exists

VEC_WEIGHT = 0.7
TEXT_WEIGHT = 0.3
TEXT_SCALE = 10.0
VEC_GATE = 0.30
DEDUPE_PREFIX = 120


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
    reranker_score: float | None = None
    score: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self.score = hybrid_score(self.vec_score, self.text_score)


def hybrid_score(vec_score: float, text_score: float) -> float:
    return vec_score * VEC_WEIGHT + text_score * TEXT_SCALE * TEXT_WEIGHT


_CANDIDATES = """
WITH q AS (
    SELECT replace(plainto_tsquery('simple', %(text)s)::text, '&', '|') AS terms
), hits AS (
    SELECT id, document_id, kb_id, chunk_index, content, filename, page_start, page_end, source,
           document_type, organizational_unit, source_path, metadata, content_tsv,
           1 - (embedding <=> %(vec)s) AS vec_score
      FROM {t}
     WHERE kb_id = ANY(%(kb_ids)s)
     ORDER BY embedding <=> %(vec)s
     LIMIT %(limit)s
)
SELECT hits.*, CASE WHEN q.terms = '' THEN 0.0
                    ELSE ts_rank(hits.content_tsv, q.terms::tsquery) END AS text_score
  FROM hits CROSS JOIN q
"""


def vector_candidates(
    conn: psycopg.Connection,
    collection: str,
    *,
    vector: Sequence[float],
    text: str,
    kb_ids: Sequence[uuid.UUID],
    limit: int,
) -> list[Candidate]:
    if not kb_ids or not table_exists(conn, collection):
        return []
    rows = conn.execute(
        sql.SQL(_CANDIDATES).format(t=table_ident(collection)),
        {
            "vec": np.asarray(vector, dtype=np.float32),
            "text": text,
            "kb_ids": list(kb_ids),
            "limit": limit,
        },
    ).fetchall()
    return [
        Candidate(
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
        )
        for r in rows
    ]


def rank(candidates: list[Candidate], *, top_k: int, gate: bool = True) -> list[Candidate]:
    """Weighted order, both gates, dedupe on the first 120 characters, then top_k."""
    ordered = sorted(candidates, key=lambda c: c.score, reverse=True)
    seen: set[str] = set()
    out: list[Candidate] = []
    for c in ordered:
        if gate and (c.vec_score < VEC_GATE or (c.reranker_score is not None and c.reranker_score < VEC_GATE)):
            continue
        key = c.content[:DEDUPE_PREFIX]
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
        if len(out) == top_k:
            break
    return out
