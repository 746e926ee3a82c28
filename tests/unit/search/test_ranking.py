"""The search's ranking policy (R-SRCH-1 revised): the convex fusion, the gates, the dedupe, top_k."""

from __future__ import annotations

import uuid

import pytest

from sluice.search.ranking import fuse, passes_gates, rank, verdict
from sluice.vectors.search import Candidate


def cand(content: str, vec: float, text: float = 0.0, rerank: float | None = None, *, strong: bool = False,
         collection: str = "c") -> Candidate:
    return Candidate(collection=collection, chunk_id=1, document_id=uuid.uuid4(), kb_id=None, chunk_index=0,
                     content=content, filename=None, page_start=None, page_end=None, source=None,
                     document_type=None, organizational_unit=None, source_path=None, metadata={},
                     vec_score=vec, text_score=text, reranker_score=rerank, strong_match=strong,
                     found_by=("vector", "text") if strong else ("vector",))


def test_both_scores_are_scaled_within_the_pool_and_combined_by_alpha():
    pool = [cand("a", 0.9, 0.0), cand("b", 0.5, 4.0), cand("c", 0.7, 2.0)]
    fuse(pool, alpha=0.7)
    assert [(c.vec_norm, c.text_norm) for c in pool] == [(1.0, 0.0), (0.0, 1.0), (pytest.approx(0.5), 0.5)]
    assert [c.hybrid_score for c in pool] == [pytest.approx(0.7), pytest.approx(0.3), pytest.approx(0.5)]


def test_each_collections_pool_is_scaled_on_its_own():
    pool = [cand("a", 0.9, 10.0, collection="x"), cand("b", 0.5, 20.0, collection="x"),
            cand("c", 0.4, 1.0, collection="y"), cand("d", 0.3, 0.5, collection="y")]
    fuse(pool, alpha=0.5)
    assert [c.text_norm for c in pool] == [0.0, 1.0, 1.0, 0.0]
    assert [c.vec_norm for c in pool] == [1.0, 0.0, 1.0, 0.0]


def test_a_pool_of_one_scales_a_score_to_one_and_no_score_to_zero():
    [only] = pool = [cand("a", 0.6, 0.0)]
    fuse(pool)
    assert (only.vec_norm, only.text_norm) == (1.0, 0.0)


def test_alpha_zero_and_one_are_the_single_sides_orders():
    pool = [cand("a", 0.9, 1.0), cand("b", 0.8, 3.0), cand("c", 0.7, 2.0)]
    assert [c.content for c in rank(pool, top_k=3, alpha=1.0)] == ["a", "b", "c"]
    assert [c.content for c in rank(pool, top_k=3, alpha=0.0)] == ["b", "c", "a"]


def test_the_cosine_gate_stops_a_low_cosine_unless_it_is_a_strong_lexical_match():
    weak = cand("weak", 0.2, 5.0)
    strong = cand("strong", 0.1, 5.0, strong=True)
    above = cand("above", 0.31)
    ranked = rank([weak, strong, above], top_k=4)
    assert sorted(c.content for c in ranked) == ["above", "strong"]
    assert verdict(weak) == (False, "vec_gate")
    assert verdict(strong) == (True, "strong_lexical")
    assert verdict(above) == (True, "vec_gate")


def test_the_gate_is_the_candidates_own_when_set():
    c = cand("x", 0.2)
    assert not passes_gates(c)
    c.vec_gate = 0.15
    assert passes_gates(c)
    c.vec_gate = 0.0
    assert verdict(cand("y", -0.1, 0.0)) == (False, "vec_gate")


def test_a_strong_lexical_match_still_needs_the_rerankers_gate():
    assert verdict(cand("s", 0.1, 3.0, rerank=0.2, strong=True)) == (False, "reranker_gate")
    assert verdict(cand("t", 0.1, 3.0, rerank=0.5, strong=True)) == (True, "strong_lexical")


def test_with_a_reranker_both_gates_apply_and_its_score_orders():
    ranked = rank([cand("a", 0.9, rerank=0.2), cand("b", 0.5, rerank=0.8), cand("c", 0.25, rerank=0.99),
                   cand("d", 0.6, rerank=0.4)], top_k=4)
    # a fails the reranker gate, c the vector gate; b outranks d on the reranker's score
    assert [c.content for c in ranked] == ["b", "d"]
    assert passes_gates(cand("e", 0.3, rerank=0.3)) and not passes_gates(cand("f", 0.29))


def test_results_are_deduplicated_on_their_first_120_characters_and_cut_at_top_k():
    same = "x" * 120
    ranked = rank([cand(same + " one", 0.9), cand(same + " two", 0.8), cand("other", 0.7), cand("third", 0.6)],
                  top_k=2)
    assert [c.content for c in ranked] == [same + " one", "other"]


def test_a_tie_at_the_extremes_goes_to_the_strong_lexical_match():
    # GIVEN near-identical notes: the one asked for holds every lexeme (BM25 best) but has the pool's
    # lowest cosine, another the best cosine and the lowest BM25: 0.5 x 1 + 0.5 x 0 each at alpha 0.5
    asked = cand("asked", 0.4365, 6.82, strong=True)
    other = cand("other", 0.468, 3.14)
    middle = cand("middle", 0.45, 3.14)
    ranked = rank([other, middle, asked], top_k=3, alpha=0.5)
    assert [c.hybrid_score for c in (asked, other)] == [0.5, 0.5]
    assert [c.content for c in ranked] == ["asked", "other", "middle"]
