"""The search's ranking policy (R-SRCH-1 revised, R-SRCH-10): the convex fusion over bounds of the query
and the candidate alone, the rare-identifier rule, the gates, the dedupe, top_k."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.search.ranking import fuse, order, passes_gates, rank, verdict
from sluice.vectors.fulltext import K1
from sluice.vectors.search import Candidate

# A query whose scored lexemes' IDFs add up to 10: the most BM25 can give it is (k1 + 1) x 10.
BOUND = (K1 + 1) * 10


def cand(content: str, vec: float, text: float = 0.0, rerank: float | None = None, *, strong: bool = False,
         collection: str = "c", bound: float = BOUND, identifiers: int = 0) -> Candidate:
    return Candidate(collection=collection, chunk_id=1, document_id=uuid.uuid4(), kb_id=None, chunk_index=0,
                     content=content, filename=None, page_start=None, page_end=None, source=None,
                     document_type=None, organizational_unit=None, source_path=None, metadata={},
                     vec_score=vec, text_score=text, reranker_score=rerank, strong_match=strong,
                     found_by=("vector", "text") if strong else ("vector",), text_bound=bound,
                     identifier_hits=identifiers)


def test_each_score_is_scaled_by_the_querys_own_bounds_and_combined_by_alpha():
    pool = [cand("a", 0.9, 0.0), cand("b", 0.5, 11.0), cand("c", 0.7, 4.4)]
    fuse(pool, alpha=0.7)
    assert [(c.vec_norm, c.text_norm) for c in pool] == [
        (0.9, 0.0), (0.5, pytest.approx(0.5)), (0.7, pytest.approx(0.2))]
    assert [c.hybrid_score for c in pool] == [pytest.approx(0.63), pytest.approx(0.5), pytest.approx(0.55)]


def test_a_negative_cosine_counts_as_none_and_a_query_without_a_lexical_side_as_no_bm25():
    [c] = pool = [cand("a", -0.2, 3.0, bound=0.0)]
    fuse(pool)
    assert (c.vec_norm, c.text_norm, c.hybrid_score) == (0.0, 0.0, 0.0)


def test_the_issues_miss_the_note_holding_the_code_comes_first():
    # Measured on a collection of 247 real files and 24 notes (issue 40): the query "reference code
    # zqb5f7f93f26"; the note holds each of its lexemes once, so its BM25 is about the sum of their
    # IDFs (16.86) and the query's bound (k1 + 1) times that. Min-max within this pool put cython.pdf
    # first (0.644 against 0.604).
    bound = (K1 + 1) * 16.86
    cython = cand("cython.pdf", 0.459, 4.85, bound=bound)
    note = cand("note-0.txt", 0.296, 16.86, strong=True, bound=bound, identifiers=1)
    mupdf = cand("mupdf_explored.pdf", 0.426, 5.11, bound=bound)
    assert [c.content for c in rank([cython, note, mupdf], top_k=3)] == ["note-0.txt", "cython.pdf",
                                                                         "mupdf_explored.pdf"]
    # the fusion alone already orders it first; the identifier rule holds it there at any alpha but 1
    note.identifier_hits = 0
    assert rank([cython, note, mupdf], top_k=1)[0].content == "note-0.txt"
    note.identifier_hits = 1
    for alpha in (0.0, 0.3, 0.5, 0.7, 0.9, 0.99):
        assert rank([cython, note, mupdf], top_k=1, alpha=alpha)[0].content == "note-0.txt"
    assert rank([cython, note, mupdf], top_k=1, alpha=1.0)[0].content == "cython.pdf"  # the vector side alone


def test_the_issues_second_miss_a_sibling_without_the_code_ranks_below_the_note():
    # A sibling note found by both sides for "reference code" (cosine 0.452, BM25 7.47) scored 0.721
    # under min-max, above the note holding the code (cosine 0.334, BM25 16.90, 0.660).
    bound = (K1 + 1) * 16.90
    sibling = cand("note-7.txt", 0.452, 7.47, bound=bound)
    note = cand("note-3.txt", 0.334, 16.90, strong=True, bound=bound, identifiers=1)
    assert [c.content for c in rank([sibling, note], top_k=2)] == ["note-3.txt", "note-7.txt"]
    ranked = order([sibling, note])
    assert not ranked[0].lifted_by_identifier  # the fusion put it first; the rule did not have to


def test_the_diagnostic_says_when_the_identifier_rule_decided_an_order():
    # at alpha 0.9 the cosine dominates: the rule lifts the holder above a candidate of higher score
    holder = cand("holder", 0.30, 16.0, bound=(K1 + 1) * 16.0, identifiers=1)
    close = cand("close", 0.60, 2.0, bound=(K1 + 1) * 16.0)
    ranked = order([close, holder], alpha=0.9)
    assert [c.content for c in ranked] == ["holder", "close"]
    assert close.hybrid_score > holder.hybrid_score and holder.lifted_by_identifier
    assert not close.lifted_by_identifier


def test_several_identifiers_the_holder_of_more_first():
    both = cand("both", 0.2, 12.0, identifiers=2)
    one = cand("one", 0.5, 8.0, identifiers=1)
    none = cand("none", 0.9, 1.0)
    assert [c.content for c in order([none, one, both])] == ["both", "one", "none"]


def test_a_candidate_holding_a_rare_identifier_passes_the_cosine_gate():
    note = cand("note", 0.05, 9.0, identifiers=1)
    assert verdict(note) == (True, "rare_identifier")
    assert verdict(cand("other", 0.05, 9.0)) == (False, "vec_gate")


_scores = st.tuples(st.floats(-1.0, 1.0), st.floats(0.0, BOUND), st.booleans(), st.integers(0, 2))


@settings(max_examples=300, deadline=None)
@given(pool=st.lists(_scores, min_size=2, max_size=12), third=_scores, alpha=st.floats(0.0, 1.0))
def test_two_candidates_keep_their_order_whatever_else_is_in_the_pool(pool, third, alpha):
    """R-SRCH-10: the order of A and B never depends on a third candidate joining or leaving."""
    def made(spec: tuple[float, float, bool, int], name: str) -> Candidate:
        vec, text, strong, ids = spec
        return cand(name, vec, text, strong=strong, identifiers=ids)

    without = [made(spec, f"c{i}") for i, spec in enumerate(pool)]
    before = [c.content for c in order(list(without), alpha)]
    with_third = [made(spec, f"c{i}") for i, spec in enumerate(pool)] + [made(third, "third")]
    after = [c.content for c in order(with_third, alpha) if c.content != "third"]
    assert after == before


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


def test_among_near_identical_notes_the_one_holding_every_word_comes_first():
    # GIVEN near-identical notes: the one asked for holds every lexeme (BM25 best) but has the lowest
    # cosine; another the best cosine and a lower BM25
    bound = (K1 + 1) * 6.82
    asked = cand("asked", 0.4365, 6.82, strong=True, bound=bound)
    other = cand("other", 0.468, 3.14, bound=bound)
    middle = cand("middle", 0.45, 3.14, bound=bound)
    ranked = rank([other, middle, asked], top_k=3, alpha=0.5)
    assert [c.content for c in ranked] == ["asked", "other", "middle"]


def test_a_tie_goes_to_the_strong_lexical_match():
    a = cand("strong", 0.4, 4.0, strong=True)
    b = cand("weak", 0.4, 4.0)
    assert [c.content for c in rank([b, a], top_k=2)] == ["strong", "weak"]
