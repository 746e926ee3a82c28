"""A search is bounded whatever a caller types (R-SRCH-8): the lexical side scores at most the rarest
MAX_QUERY_LEXEMES lexemes of a query, and every search statement runs under a statement timeout, past
which the search answers 503 with a sentence and the pooled connection is clean. Real embedded
PostgreSQL."""

from __future__ import annotations

import uuid

import pytest

from sluice.db.connection import transaction
from sluice.errors import SearchTimeoutError
from sluice.search.service import DiagnosticRequest, SearchRequest, diagnostic, search
from sluice.vectors import bounds, store
from sluice.vectors.fulltext import MAX_QUERY_LEXEMES, text_query
from tests.fakes import embedder_returning
from tests.integration.search.conftest import make_base, unit, viewer

AXIS = unit([1, 0, 0, 0, 0, 0, 0, 0])
COMMON = [f"common{m}" for m in range(8)]


def _fill(conn, name: str, chunks: int) -> uuid.UUID:
    """``chunks`` chunks, each with a word of its own and every common word."""
    store.ensure_table(conn, name, 8)
    kb = make_base(conn, name)
    store.insert_chunks(conn, name, [
        store.ChunkRow(document_id=uuid.uuid4(), kb_id=kb.id, org_id=kb.org_id, chunk_index=0,
                       content=" ".join([f"only{k}", *COMMON]) + (f" pair{k // 2}"),
                       embedding=unit([1, (k % 7) / 10, 0, 0, 0, 0, 0, 0]))
        for k in range(chunks)])
    conn.commit()
    return kb.id


def _long_query(chunks: int) -> str:
    """About 1,200 distinct words: every chunk's own word, the pairs, the common words, and words no chunk holds."""
    words = [f"only{k}" for k in range(chunks)] + [f"pair{k}" for k in range(chunks // 2)] + COMMON
    words += [f"absent{k}" for k in range(1_200 - len(words))]
    return " ".join(words)


def _longest_allowed(chunks: int) -> str:
    """The most of that a search takes: 4,000 characters, cut at a word."""
    return _long_query(chunks)[:4_000].rsplit(" ", 1)[0]


def test_a_long_query_scores_only_its_rarest_lexemes(conn):
    kb_id = _fill(conn, "longq", 300)
    query = text_query(conn, "longq", "simple", _long_query(300), [kb_id])
    assert len(query.lexemes) >= 1_200
    scored = [lx for lx, _ in query.weights]
    # the cap, taken from the rarest: words one chunk holds, before the pairs (two) and the common words (all)
    assert len(scored) == MAX_QUERY_LEXEMES
    assert all(lx.startswith("only") for lx in scored)
    assert not set(COMMON) & set(scored)
    # a short query keeps every lexeme, common words included
    short = text_query(conn, "longq", "simple", "only3 pair1 common0", [kb_id])
    assert sorted(lx for lx, _ in short.weights) == ["common0", "only3", "pair1"]


def test_the_longest_query_still_answers(conn):
    _fill(conn, "answers", 300)
    req = SearchRequest(query=_longest_allowed(300), collections=["answers"], top_k=3, min_vec_score=0.0)
    found = search(conn, viewer(), req, embedder_for=embedder_returning(AXIS)).results
    assert len(found) == 3


def test_a_search_past_its_statement_timeout_answers_503_and_the_connection_is_clean(db_url, conn, monkeypatch):
    _fill(conn, "slow", 3_000)
    monkeypatch.setattr(bounds, "SEARCH_STATEMENT_TIMEOUT_MS", 1)
    req = SearchRequest(query=_longest_allowed(3_000), collections=["slow"], top_k=3, min_vec_score=0.0,
                        candidates=200)
    with pytest.raises(SearchTimeoutError) as refused, transaction() as c:
        search(c, viewer(), req, embedder_for=embedder_returning(AXIS))
    assert refused.value.status == 503
    assert refused.value.message == bounds.timeout_sentence(1)
    with pytest.raises(SearchTimeoutError), transaction() as c:
        diagnostic(c, viewer(), DiagnosticRequest(query=req.query, collections=["slow"]),
                   embedder_for=embedder_returning(AXIS))
    monkeypatch.undo()
    # the pool's connections were rolled back: no aborted transaction, no timeout left behind
    for _ in range(3):
        with transaction() as c:
            assert c.execute("SHOW statement_timeout").fetchone()["statement_timeout"] == "0"
            assert len(search(c, viewer(), SearchRequest(query="only7 common1", collections=["slow"], top_k=2,
                                                         min_vec_score=0.0),
                              embedder_for=embedder_returning(AXIS)).results) == 2
    # and inside a search's transaction the bound is in force
    with transaction() as c:
        search(c, viewer(), SearchRequest(query="only7", collections=["slow"]), embedder_for=embedder_returning(AXIS))
        assert c.execute("SHOW statement_timeout").fetchone()["statement_timeout"] == "10s"
