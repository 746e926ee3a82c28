"""The search's ranking policy (R-SRCH-1): the weighted order, both gates, the dedupe, top_k."""

from __future__ import annotations

import uuid

from sluice.search.ranking import hybrid_score, passes_gates, rank
from sluice.vectors.search import Candidate


def cand(content: str, vec: float, text: float = 0.0, rerank: float | None = None) -> Candidate:
    return Candidate(collection="c", chunk_id=1, document_id=uuid.uuid4(), kb_id=None, chunk_index=0,
                     content=content, filename=None, page_start=None, page_end=None, source=None,
                     document_type=None, organizational_unit=None, source_path=None, metadata={},
                     vec_score=vec, text_score=text, reranker_score=rerank)


def test_the_weighted_score_is_the_spec_formula():
    assert hybrid_score(cand("x", 0.8, 0.1)) == 0.8 * 0.7 + 0.1 * 10 * 0.3


def test_rank_orders_by_weighted_score_and_gates_on_the_vector_score():
    ordered = rank([cand("a", 0.9, 0.0), cand("b", 0.8, 0.1), cand("c", 0.2, 0.9)], top_k=4)
    # 0.8*0.7 + 0.1*10*0.3 = 0.86 beats 0.63; 0.2 is under the 0.30 gate whatever its text rank
    assert [c.content for c in ordered] == ["b", "a"]


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
