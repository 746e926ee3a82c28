"""How candidates become results (R-SRCH-1, revised 2026-12-02): the fusion, the gates, the order,
the dedupe.

The policy of the search, kept apart from the SQL that finds candidates
(``sluice.vectors.search``): the weights, the thresholds and the dedupe length are the spec's, and
the diagnostic view reports them as they are here.

Fusion (R-SRCH-10, 2026-12-03): each score is scaled by bounds that depend only on the query and the
candidate itself, never on the other candidates of the pool ("theoretical min-max", Bruch, Gai and
Ingber, ACM TOIS 2023): the cosine by its range, clipped to [0, 1]; BM25 by the most the query can
score in its collection (``Candidate.text_bound``: ``k1 + 1`` times the sum of its scored lexemes'
IDFs, ``sluice.vectors.fulltext.TextQuery.bound``). They are combined as
``alpha * vec + (1 - alpha) * lex``. So whether one candidate ranks above another never depends on
which third candidate is in the pool: min-max within the pool stretched a pool's narrow band of
cosines (0.29 to 0.46) to the whole [0, 1], so a slightly better cosine outweighed a BM25 three times
anyone else's, and a low-cosine newcomer could turn the order around.

Identifiers (R-SRCH-10): with any ``alpha`` below 1, candidates are ordered first by how many of the
query's rare identifiers they hold (a lexeme with a digit that at most
``sluice.vectors.fulltext.RARE_IDENTIFIER_CHUNKS`` chunks of the scope hold), then by the fused score:
an order number, an error code or a part number someone pastes finds the chunks holding it first,
whatever the cosine says. An identifier held by more chunks is ordinary BM25 and the cosine keeps its
say. A query without one orders as the fusion alone.

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

Gate = Literal["vec_gate", "strong_lexical", "rare_identifier", "reranker_gate"]


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))


def normalised(c: Candidate) -> tuple[float, float]:
    """The candidate's cosine and BM25 on [0, 1], by bounds of the query and the candidate alone."""
    text = c.text_score / c.text_bound if c.text_bound > 0 else 0.0
    return _unit(c.vec_score), _unit(text)


def fuse(candidates: Sequence[Candidate], alpha: float = ALPHA) -> None:
    """Set each candidate's normalised scores and ``hybrid_score`` (each candidate on its own)."""
    for c in candidates:
        c.vec_norm, c.text_norm = normalised(c)
        c.hybrid_score = alpha * c.vec_norm + (1 - alpha) * c.text_norm


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
    if c.identifier_hits:
        return True, "rare_identifier"
    return False, "vec_gate"


def passes_gates(c: Candidate) -> bool:
    return verdict(c)[0]


def order(candidates: list[Candidate], alpha: float = ALPHA) -> list[Candidate]:
    """Fused (``fuse``); with ``alpha`` below 1 the holders of more of the query's rare identifiers
    first; then by the reranker's score when there is one, else the fused score; ties to a strong
    lexical match, then by vector score (among near-identical chunks, notes that differ by one
    identifier, the one holding every word of the query is the one asked for).

    Marks ``lifted_by_identifier`` on each candidate the identifier rule put above one of higher score."""
    fuse(candidates, alpha)
    tiered = alpha < 1

    def key(c: Candidate) -> tuple[int, float, bool, float]:
        return (c.identifier_hits if tiered else 0, score(c), c.strong_match, c.vec_score)

    ordered = sorted(candidates, key=key, reverse=True)
    best_below = float("-inf")
    for c in reversed(ordered):  # the best score among the candidates ranked below each one
        c.lifted_by_identifier = tiered and c.identifier_hits > 0 and best_below > score(c)
        best_below = max(best_below, score(c))
    return ordered


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
