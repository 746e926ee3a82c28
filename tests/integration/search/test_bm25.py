"""BM25 in plain SQL (R-SRCH-1, revised 2026-12-02): the statistics a collection keeps exact through
every write and delete, the scores against numbers worked by hand, and the gate a strong lexical
match passes. Real embedded PostgreSQL."""

from __future__ import annotations

import threading
import uuid
from collections import Counter

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from sluice.search.service import SearchRequest, search
from sluice.vectors import store
from sluice.vectors.search import BaseScope, find_candidates
from tests.fakes import embedder_returning
from tests.integration.search.conftest import make_base, unit, viewer

AXIS = [unit([1, 0, 0, 0, 0, 0, 0, 0])]


def row(kb, text: str, doc: uuid.UUID, i: int = 0, vec: list[float] | None = None) -> store.ChunkRow:
    return store.ChunkRow(document_id=doc, kb_id=kb.id, org_id=kb.org_id, chunk_index=i, content=text,
                          embedding=vec or AXIS[0])


def statistics(conn, collection: str) -> tuple[int, int, dict[str, int]]:
    """(chunks, total lexemes, chunks per lexeme) as the triggers kept them, summed over the table's bases."""
    rel = {"t": f"rag_{collection}"}
    head = conn.execute("SELECT sum(chunks) AS chunks, sum(lexemes) AS lexemes FROM collection_text_stats "
                        "WHERE relid = to_regclass(%(t)s)", rel).fetchone()
    held = conn.execute("SELECT lexeme, sum(chunks) AS chunks FROM collection_lexemes "
                        "WHERE relid = to_regclass(%(t)s) GROUP BY lexeme", rel).fetchall()
    return (head["chunks"], head["lexemes"], {r["lexeme"]: r["chunks"] for r in held}) if head["chunks"] else (0, 0, {})


def expected(texts: list[str]) -> tuple[int, int, dict[str, int]]:
    """The same three figures counted in Python: 'simple' makes each lower-case word a lexeme."""
    sets = [set(t.split()) for t in texts]
    return len(sets), sum(len(s) for s in sets), dict(Counter(w for s in sets for w in s))


def test_the_statistics_follow_insert_replacement_retirement_and_delete(conn):
    store.ensure_table(conn, "stats", 8)
    kb = make_base(conn, "stats")
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    store.insert_chunks(conn, "stats", [row(kb, "apple banana apple", a, 0), row(kb, "apple cherry", a, 1),
                                        row(kb, "banana date", b), row(kb, "elder", c)])
    assert statistics(conn, "stats") == (4, 7, {"apple": 2, "banana": 2, "cherry": 1, "date": 1, "elder": 1})

    # a replacement writes the new chunks, then deletes the old (R-VEC-3)
    store.replace_document_chunks(conn, "stats", a, [row(kb, "fig apple", a)])
    assert statistics(conn, "stats") == (3, 5, {"apple": 1, "banana": 1, "date": 1, "elder": 1, "fig": 1})

    # a retirement and a document delete both go through the document's chunk delete
    store.delete_document_chunks(conn, "stats", b)
    assert statistics(conn, "stats") == (2, 3, {"apple": 1, "elder": 1, "fig": 1})
    store.delete_document_chunks(conn, "stats", c)
    conn.commit()
    assert statistics(conn, "stats") == (1, 2, {"apple": 1, "fig": 1})

    # a rolled-back write leaves no trace in them
    store.insert_chunks(conn, "stats", [row(kb, "grape", uuid.uuid4())])
    conn.rollback()
    assert statistics(conn, "stats") == (1, 2, {"apple": 1, "fig": 1})

    # and the table's drop takes them
    store.drop_table(conn, "stats")
    assert conn.execute("SELECT count(*) AS n FROM collection_lexemes").fetchone()["n"] == 0
    assert conn.execute("SELECT count(*) AS n FROM collection_text_stats").fetchone()["n"] == 0


def test_a_base_teardown_on_a_shared_collection_takes_only_its_chunks_from_the_counts(conn):
    store.ensure_table(conn, "shared_stats", 8)
    acme, globex = make_base(conn, "shared_stats", org="acme"), make_base(conn, "shared_stats", org="globex")
    store.insert_chunks(conn, "shared_stats", [row(acme, "harbour lantern", uuid.uuid4()),
                                               row(acme, "harbour quay", uuid.uuid4())])
    store.insert_chunks(conn, "shared_stats", [row(globex, "harbour pier", uuid.uuid4())])
    # the teardown's step deletes the base's chunks in batches (here of one)
    while store.delete_chunks_of(conn, "shared_stats", [acme.id], [], limit=1):
        conn.commit()
    assert statistics(conn, "shared_stats") == (1, 2, {"harbour": 1, "pier": 1})


def test_the_migration_counts_a_table_that_existed_before_it(conn):
    store.ensure_table(conn, "older", 8)
    kb = make_base(conn, "older")
    store.insert_chunks(conn, "older", [row(kb, "kettle lamp", uuid.uuid4()), row(kb, "lamp", uuid.uuid4())])
    # as a table created before migration 0014: no statistics, no triggers
    conn.execute("DROP TRIGGER text_stats_insert ON rag_older; DROP TRIGGER text_stats_delete ON rag_older;"
                 "DELETE FROM collection_lexemes; DELETE FROM collection_text_stats")
    conn.execute("SELECT sluice_text_stats_attach('rag_older'::regclass)")  # what the migration runs per table
    assert statistics(conn, "older") == (2, 3, {"kettle": 1, "lamp": 2})
    store.insert_chunks(conn, "older", [row(kb, "lamp oil", uuid.uuid4())])
    assert statistics(conn, "older") == (3, 5, {"kettle": 1, "lamp": 3, "oil": 1})


WORDS = [f"w{i:03d}" for i in range(200)]


def test_concurrent_embeds_of_one_collection_neither_deadlock_nor_lose_a_count(db_url, conn):
    # GIVEN one collection, and four writers each replacing its own document many times, their
    # chunks sharing lexemes written in opposite orders
    store.ensure_table(conn, "busy", 8)
    kb = make_base(conn, "busy")
    conn.commit()
    docs = [uuid.uuid4() for _ in range(4)]
    final: dict[uuid.UUID, list[str]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(docs))

    def writer(n: int, doc: uuid.UUID) -> None:
        try:
            with psycopg.connect(db_url, row_factory=dict_row) as c:
                register_vector(c)
                start.wait()
                for round_ in range(8):
                    words = WORDS if (n + round_) % 2 else WORDS[::-1]
                    texts = [" ".join(words[j::7][: 20 + n]) for j in range(7)] + [f"only{n}r{round_}"]
                    store.replace_document_chunks(c, "busy", doc, [row(kb, t, doc, i) for i, t in enumerate(texts)])
                    c.commit()
                    final[doc] = texts
        except BaseException as exc:  # noqa: BLE001 - reported below, with the thread's own error
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n, d)) for n, d in enumerate(docs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)

    # THEN no writer failed (a deadlock is an error PostgreSQL raises in one of them) and the counts
    # are exactly those of the chunks left
    assert not errors, errors
    assert len(final) == 4
    conn.rollback()
    assert statistics(conn, "busy") == expected([t for texts in final.values() for t in texts])


# --- the score ----------------------------------------------------------------------------------

# A collection of four chunks, 'simple'. Lexeme counts 2, 2, 5, 2: average 11 / 4 = 2.75.
HAND_MADE = ["apple banana apple", "apple cherry", "apple banana cherry date elder", "apple fig"]
# Worked by hand for "apple banana", k1 1.2, b 0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5)):
#   apple is in all 4 chunks: idf = ln(1 + 0.5 / 4.5) = 0.1053605; banana in 2: idf = ln(2) = 0.6931472
#   chunk 1 (length 2, apple twice): K = 1.2 * (0.25 + 0.75 * 2 / 2.75) = 0.9545455
#     0.1053605 * 2 * 2.2 / (2 + K) + 0.6931472 * 2.2 / (1 + K) = 0.1569060 + 0.7801937 = 0.9370997
#   chunk 2 and 4 (length 2): 0.1053605 * 2.2 / 1.9545455 = 0.1185918
#   chunk 3 (length 5): K = 1.9363636; (0.1053605 + 0.6931472) * 2.2 / 2.9363636 = 0.5982627
HAND_SCORES = [0.9370997, 0.1185918, 0.5982627, 0.1185918]


def test_bm25_scores_of_a_hand_made_collection_equal_the_numbers_worked_by_hand(conn):
    store.ensure_table(conn, "hand", 8)
    kb = make_base(conn, "hand")
    docs = [uuid.uuid4() for _ in HAND_MADE]
    store.insert_chunks(conn, "hand", [row(kb, t, d) for t, d in zip(HAND_MADE, docs, strict=True)])

    found, _ = find_candidates(conn, "hand", vector=AXIS[0], text="apple banana", scope=[BaseScope(kb.id, "acme")],
                               limit=4)

    by_doc = {c.document_id: c.text_score for c in found}
    assert [by_doc[d] for d in docs] == [pytest.approx(s, abs=1e-6) for s in HAND_SCORES]


def test_the_lexical_top_is_taken_after_the_scope_and_by_bm25(conn):
    # the best-scoring chunk belongs to another tenant: the lexical top 1 is the best in scope
    store.ensure_table(conn, "hand_scoped", 8)
    acme, globex = make_base(conn, "hand_scoped", org="acme"), make_base(conn, "hand_scoped", org="globex")
    store.insert_chunks(conn, "hand_scoped", [row(globex, HAND_MADE[0], uuid.uuid4())])
    mine = [uuid.uuid4() for _ in HAND_MADE[1:]]
    store.insert_chunks(conn, "hand_scoped", [row(acme, t, d) for t, d in zip(HAND_MADE[1:], mine, strict=True)])
    away = unit([0, 1, 0, 0, 0, 0, 0, 0])
    found, _ = find_candidates(conn, "hand_scoped", vector=away, text="banana", scope=[BaseScope(acme.id, "acme")],
                               limit=1)
    assert [c.document_id for c in found if "text" in c.found_by] == [mine[1]]


# --- the gate -----------------------------------------------------------------------------------

def test_an_identifier_under_the_cosine_gate_is_returned_first_and_nothing_else_passes(conn):
    store.ensure_table(conn, "gate", 8)
    kb = make_base(conn, "gate")
    query = unit([1, 0, 0, 0, 0, 0, 0, 0])
    low = unit([0.1, 0.995, 0, 0, 0, 0, 0, 0])  # cosine 0.1 to the query: far under any gate
    ident = uuid.uuid4()
    store.insert_chunks(conn, "gate", [row(kb, "invoice ZX-4471-QP was paid in march", ident, vec=low)] + [
        row(kb, f"invoice {n} was paid in march", uuid.uuid4(), vec=low) for n in range(10)])
    conn.commit()

    found = search(conn, viewer(), SearchRequest(query="ZX-4471-QP", collections=["gate"]),
                   embedder_for=embedder_returning(query))
    assert [c.document_id for c in found.results] == [ident]
    assert found.results[0].strong_match and found.results[0].vec_score < 0.2

    # a query no chunk shares a lexeme with, at a low cosine, still returns nothing: the gate holds
    assert search(conn, viewer(), SearchRequest(query="quarterly forecast", collections=["gate"]),
                  embedder_for=embedder_returning(query)).results == []
    # and a partial lexical match at a low cosine is no strong match: "invoice" alone is not the query
    assert search(conn, viewer(), SearchRequest(query="invoice forecast", collections=["gate"]),
                  embedder_for=embedder_returning(query)).results == []
    # min_vec_score 0 lets every candidate through
    assert len(search(conn, viewer(), SearchRequest(query="invoice forecast", collections=["gate"],
                                                    min_vec_score=0.0),
                      embedder_for=embedder_returning(query)).results) == 4


def test_alpha_one_and_zero_reproduce_the_vector_and_lexical_orders(conn):
    store.ensure_table(conn, "alpha", 8)
    kb = make_base(conn, "alpha")
    texts = ["kiwi", "kiwi kiwi mango", "mango", "kiwi mango papaya lime", "papaya"]
    vecs = [unit([1, 0.1 * i, 0, 0, 0, 0, 0, 0]) for i in range(len(texts))]  # cosine falls with i
    store.insert_chunks(conn, "alpha", [row(kb, t, uuid.uuid4(), vec=v) for t, v in zip(texts, vecs, strict=True)])
    conn.commit()

    def order(alpha: float) -> list[str]:
        req = SearchRequest(query="kiwi", collections=["alpha"], top_k=5, candidates=5, alpha=alpha,
                            min_vec_score=0.0)
        return [c.content for c in search(conn, viewer(), req, embedder_for=embedder_returning(AXIS[0])).results]

    assert order(1.0) == texts  # by cosine
    # by BM25 first (tf 2 beats tf 1, the short chunk beats the long one), then the chunks without kiwi
    assert order(0.0)[:3] == ["kiwi kiwi mango", "kiwi", "kiwi mango papaya lime"]
