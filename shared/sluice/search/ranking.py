"""How candidates become results (R-SRCH-1, revised 2026-12-02): the fusion, the gates, the order,
the dedupe.

The policy of the search, kept apart from the SQL that finds candidates
(``sluice.vectors.search``): the weights, the thresholds and the dedupe length are the spec's, and
the diagnostic view reports them as they are here.

Fusion: within one collection's pool (its BM25 is on that collection's statistics), the cosine and
the BM25 are each scaled min-max to [0, 1] and combined as ``alpha * vec + (1 - alpha) * lex``.

Gates: a candidate passes when its cosine reaches its collection's gate (the embedding catalog's
``vec_gate`` for the model, ``DEFAULT_VEC_GATE`` where it names none, or the request's
``min_vec_score``), or when it is a strong lexical match (found by the lexical side, holding every
lexeme of the query); with a reranker, ``reranker_score >= RERANK_GATE`` as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from sluice.vectors.search import Candidate

# bench/retrieval_quality.py (bench/README.md, "Fusion"): SciFact and the generated second corpus.
ALPHA = 0.5
DEFAULT_VEC_GATE = 0.30
RERANK_GATE = 0.30
DEDUPE_PREFIX = 120

Gate = Literal["vec_gate", "strong_lexical", "reranker_gate"]


def _scaled(values: Sequence[float]) -> list[float]:
    """Min-max within the pool; a pool where every value is equal scales to 1 (or 0 when it is 0)."""
    low, high = min(values), max(values)
    if high > low:
        return [(v - low) / (high - low) for v in values]
    return [1.0 if v > 0 else 0.0 for v in values]


def fuse(candidates: Sequence[Candidate], alpha: float = ALPHA) -> None:
    """Set each candidate's normalised scores and ``hybrid_score``, pool by pool (one per collection)."""
    pools: dict[str, list[Candidate]] = {}
    for c in candidates:
        pools.setdefault(c.collection, []).append(c)
    for pool in pools.values():
        vec = _scaled([c.vec_score for c in pool])
        lex = _scaled([c.text_score for c in pool])
        for c, v, t in zip(pool, vec, lex, strict=True):
            c.vec_norm, c.text_norm = v, t
            c.hybrid_score = alpha * v + (1 - alpha) * t


def hybrid_score(c: Candidate) -> float:
    return c.hybrid_score


def score(c: Candidate) -> float:
    """What results are ordered by: the reranker's score once there is one, else the fused score."""
    return c.reranker_score if c.reranker_score is not None else c.hybrid_score


def verdict(c: Candidate) -> tuple[bool, Gate]:
    """Whether the candidate passes, and the gate that let it through or stopped it."""
    if c.reranker_score is not None and c.reranker_score < RERANK_GATE:
        return False, "reranker_gate"
    if c.vec_score >= (DEFAULT_VEC_GATE if c.vec_gate is None else c.vec_gate):
        return True, "vec_gate"
    if c.strong_match:
        return True, "strong_lexical"
    return False, "vec_gate"


def passes_gates(c: Candidate) -> bool:
    return verdict(c)[0]


def order(candidates: list[Candidate], alpha: float = ALPHA) -> list[Candidate]:
    """Fused (``fuse``), then by the reranker's score when there is one, else the fused score; ties
    to a strong lexical match, then by vector score.

    Min-max makes ties at the extremes exact: at alpha 0.5, the pool's best cosine with its worst
    BM25 scores what the worst cosine with the best BM25 does (0.5 each). Among near-identical
    chunks (notes that differ by one identifier) the one holding every word of the query is the
    one asked for."""
    fuse(candidates, alpha)
    return sorted(candidates, key=lambda c: (score(c), c.strong_match, c.vec_score), reverse=True)


def rank(candidates: list[Candidate], *, top_k: int, alpha: float = ALPHA, gate: bool = True) -> list[Candidate]:
    """The order, the gates, dedupe on the first 120 characters, then top_k."""
    seen: set[str] = set()
    out: list[Candidate] = []
    for c in order(candidates, alpha):
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
