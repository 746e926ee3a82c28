"""An exact identifier a user types finds the chunks holding it first (R-SRCH-10), and one that many
chunks hold does not override the cosine. Real embedded PostgreSQL."""

from __future__ import annotations

import uuid

from sluice.search.service import DiagnosticRequest, SearchRequest, diagnostic, search
from sluice.vectors import store
from sluice.vectors.fulltext import RARE_IDENTIFIER_CHUNKS, TextStatistics, weigh
from tests.fakes import embedder_returning
from tests.integration.search.conftest import make_base, unit, viewer

QUERY_VEC = unit([1, 0, 0, 0, 0, 0, 0, 0])
NEAR = unit([1, 0.35, 0, 0, 0, 0, 0, 0])  # cosine 0.94: boilerplate that reads like the question
FAR = unit([0.3, 0, 1, 0, 0, 0, 0, 0])  # cosine 0.29: the note holding the code reads like nothing in particular


def _row(kb, text: str, vec: list[float]) -> store.ChunkRow:
    return store.ChunkRow(document_id=uuid.uuid4(), kb_id=kb.id, org_id=kb.org_id, chunk_index=0, content=text,
                          embedding=vec)


def _collection(conn, name: str, notes: list[str], fillers: int = 60) -> None:
    store.ensure_table(conn, name, 8)
    kb = make_base(conn, name)
    rows = [_row(kb, f"Every ledger has a reference code; the codes are listed in appendix {chr(65 + i % 26)}.",
                 NEAR) for i in range(fillers)]
    rows += [_row(kb, text, FAR) for text in notes]
    store.insert_chunks(conn, name, rows)
    conn.commit()


def _first(conn, name: str, query: str, alpha: float) -> str:
    req = SearchRequest(query=query, collections=[name], top_k=3, alpha=alpha)
    results = search(conn, viewer(), req, embedder_for=embedder_returning(QUERY_VEC)).results
    return results[0].content if results else ""


def test_a_rare_identifier_finds_its_chunk_first_at_any_alpha_but_one(conn):
    notes = [f"The reference code for ledger {i} is zq{i}f9a{i * 7}b." for i in range(5)]
    _collection(conn, "ids", notes)
    for alpha in (0.0, 0.3, 0.5, 0.7, 0.9):
        assert _first(conn, "ids", "reference code zq3f9a21b", alpha) == notes[3], alpha
    # the identifier and a few words the note does not hold: still first, past the cosine gate
    assert _first(conn, "ids", "ledger appendix zq3f9a21b", 0.5) == notes[3]
    # the vector side alone knows nothing of identifiers
    assert _first(conn, "ids", "reference code zq3f9a21b", 1.0) != notes[3]
    # the diagnostic view says the rule decided the order where the cosine would have won
    found = diagnostic(conn, viewer(), DiagnosticRequest(query="reference code zq3f9a21b", collections=["ids"],
                                                         alpha=0.9),
                       embedder_for=embedder_returning(QUERY_VEC)).results
    assert found[0].content == notes[3] and found[0].identifier_hits == 1 and found[0].lifted_by_identifier
    assert not any(c.lifted_by_identifier for c in found[1:])


def test_several_identifiers_in_one_query_the_chunk_holding_both_first(conn):
    notes = ["Order ORD-2024-05654 shipped with part SKU 4471-B.", "Order ORD-2024-05654 was paid.",
             "Part SKU 4471-B is back in stock."]
    _collection(conn, "several", notes)
    assert _first(conn, "several", "status of ORD-2024-05654 and 4471-B", 0.5) == notes[0]


def test_an_identifier_in_many_chunks_does_not_override_the_cosine(conn):
    # 2024 is in 50 chunks: a year, not a record's name
    common = [f"Figures for 2024, table {i}." for i in range(50)]
    _collection(conn, "common", common, fillers=20)
    assert _first(conn, "common", "ledger reference codes 2024", 0.9).startswith("Every ledger")
    found = diagnostic(conn, viewer(), DiagnosticRequest(query="ledger reference codes 2024", collections=["common"]),
                       embedder_for=embedder_returning(QUERY_VEC)).results
    assert all(c.identifier_hits == 0 and not c.lifted_by_identifier for c in found)


def test_which_query_lexemes_are_rare_identifiers():
    stats = TextStatistics(chunks=3400, avg_len=40.0, holding={
        "zqb5f7f93f26": 1, "e11000": RARE_IDENTIFIER_CHUNKS, "2024": RARE_IDENTIFIER_CHUNKS + 40,
        "reference": 3, "code": 200})
    query = weigh(["reference", "code", "zqb5f7f93f26", "e11000", "2024", "absent9"], stats)
    # a digit and few chunks; "reference" is rare but no identifier, 2024 is in 50 chunks, absent9 in none
    assert query.rare_identifiers == ("zqb5f7f93f26", "e11000")
    assert query.bound > 0 and [lx for lx, _ in query.weights] == ["reference", "code", "zqb5f7f93f26", "e11000",
                                                                     "2024"]
