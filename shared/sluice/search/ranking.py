"""How candidates become results (R-SRCH-1): the weighted score, the gates, the order, the dedupe.

The policy of the search, kept apart from the SQL that finds candidates
(``sluice.vectors.search``): the weights, the thresholds and the dedupe length
are the spec's, and the diagnostic view reports them as they are here.
"""

from __future__ import annotations

from sluice.vectors.search import Candidate

VEC_WEIGHT = 0.7
TEXT_WEIGHT = 0.3
# Postgres full-text rank is small next to a cosine; x10 is what lets a rare shared term count.
TEXT_SCALE = 10.0
VEC_GATE = 0.30
RERANK_GATE = 0.30
DEDUPE_PREFIX = 120


def hybrid_score(c: Candidate) -> float:
    return c.vec_score * VEC_WEIGHT + c.text_score * TEXT_SCALE * TEXT_WEIGHT


def score(c: Candidate) -> float:
    """What results are ordered by: the reranker's score once there is one, else the weighted sum."""
    return c.reranker_score if c.reranker_score is not None else hybrid_score(c)


def passes_gates(c: Candidate) -> bool:
    return c.vec_score >= VEC_GATE and (c.reranker_score is None or c.reranker_score >= RERANK_GATE)


def order(candidates: list[Candidate]) -> list[Candidate]:
    """By the reranker's score when there is one, else by the weighted sum; ties by vector score."""
    return sorted(candidates, key=lambda c: (score(c), c.vec_score), reverse=True)


def rank(candidates: list[Candidate], *, top_k: int, gate: bool = True) -> list[Candidate]:
    """The order, both gates, dedupe on the first 120 characters, then top_k."""
    seen: set[str] = set()
    out: list[Candidate] = []
    for c in order(candidates):
        if gate and not passes_gates(c):
            continue
        key = c.content[:DEDUPE_PREFIX]
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
        if len(out) == top_k:
            break
    return out
