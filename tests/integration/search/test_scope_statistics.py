"""R-SRCH-9: the lexical statistics a search scores with are those of the caller's scope, so nothing a
search returns depends on content the caller cannot read, and a writer of one base cannot move another
base's scores. Real embedded PostgreSQL.

Each test reproduces a finding of the fourth security round: a shared-pool member reading another
member's vocabulary through her own probe's score, bases of different owners sharing a collection
name, and a flood of chunks into one base sinking another user's identifier.
"""

from __future__ import annotations

import math
import uuid

import pytest

from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db import recipients
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.vectors import store
from sluice.vectors.fulltext import K1, B
from sluice.vectors.search import BaseScope, find_candidates
from tests.integration.search.conftest import make_base, unit

DIM = 8
AXIS = unit([1, 0, 0, 0, 0, 0, 0, 0])


def _chunk(kb: KnowledgeBase, doc: uuid.UUID, text: str, i: int = 0) -> store.ChunkRow:
    return store.ChunkRow(document_id=doc, kb_id=kb.id, org_id=kb.org_id, chunk_index=i, content=text,
                          embedding=AXIS)


def _document(conn, kb: KnowledgeBase, text: str, *, recipients_of: list[str] | None = None,
              by: str = "alice") -> uuid.UUID:
    doc = uuid.uuid4()
    doc_repo.insert(conn, id=doc, kb_id=kb.id, org_id=kb.org_id, collection_name=kb.collection_name,
                    filename=f"{doc}.txt", storage_path=f"rag/{kb.collection_name}/{doc}/f.txt", status="done",
                    stage="done", vector_document_id=doc, chunk_count=1)
    store.insert_chunks(conn, kb.collection_name, [_chunk(kb, doc, text)])
    if recipients_of:
        recipients.add(conn, doc, recipients_of, org_id=str(kb.org_id), shared_by=by)
    return doc


def _pool(conn, collection: str, org: str = "acme") -> KnowledgeBase:
    return kb_repo.insert(conn, KnowledgeBase(
        id=uuid.uuid4(), name=f"shared with members of {org}", collection_name=collection, scope="recipients",
        owner_id=None, org_id=org, is_default=False, description="", embedding_provider="local",
        embedding_model="all-MiniLM-L6-v2", embedding_dim=DIM, embedding_base_url=None,
        embedding_secret_id=None, ingestion_config={}, created_by="admin", text_search_language="simple"))


def _text_score(conn, collection: str, scope: list[BaseScope], query: str, document: uuid.UUID) -> float:
    found, _ = find_candidates(conn, collection, vector=AXIS, text=query, scope=scope, limit=20)
    (hit,) = [c for c in found if c.document_id == document]
    return hit.text_score


def _bm25(chunks: int, holding: int, tf: int, length: int, avg_len: float) -> float:
    """One term's BM25 worked by hand (sluice.vectors.fulltext's formula, written out again here)."""
    weight = math.log(1.0 + (chunks - holding + 0.5) / (holding + 0.5))
    return weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg_len))


def test_a_shared_pool_probe_does_not_reveal_words_of_documents_shared_with_others(conn):
    # GIVEN an organization's shared pool where alice shares a probe to herself
    store.ensure_table(conn, "pool_probe", DIM)
    pool = _pool(conn, "pool_probe")
    probe = _document(conn, pool, "memo harbour", recipients_of=["alice"])
    alice = [BaseScope(pool.id, "acme", recipient="alice")]
    before = _text_score(conn, "pool_probe", alice, "memo", probe)

    # WHEN bob shares memos only with carol (alice cannot open them)
    for i in range(3):
        _document(conn, pool, f"memo salary review {i}", recipients_of=["carol"], by="bob")
    after = _text_score(conn, "pool_probe", alice, "memo", probe)

    # THEN alice's score is unchanged: her scope holds one chunk, which holds "memo" (the finding:
    # 0.2877 before, 0.1823 after a memo shared with someone else)
    assert after == pytest.approx(before, abs=1e-9)
    assert after == pytest.approx(_bm25(chunks=1, holding=1, tf=1, length=2, avg_len=2.0), abs=1e-6)


def test_bases_of_different_owners_sharing_a_collection_name_score_apart(conn):
    # GIVEN two personal bases of different users on one collection table
    store.ensure_table(conn, "same_name", DIM)
    mine = make_base(conn, "same_name", scope="personal", org=None, owner="alice")
    theirs = make_base(conn, "same_name", scope="personal", org=None, owner="bob")
    note = _document(conn, mine, "invoice zq77 harbour")
    _document(conn, mine, "harbour lantern quay")
    scope = [BaseScope(mine.id, None)]
    before = _text_score(conn, "same_name", scope, "harbour zq77", note)

    # WHEN the other owner writes many chunks holding the same words
    _document(conn, theirs, "harbour zq77 " * 3)
    for i in range(40):
        _document(conn, theirs, f"harbour pier {i}")
    after = _text_score(conn, "same_name", scope, "harbour zq77", note)

    # THEN alice's score is that of her own two chunks, before and after
    assert after == pytest.approx(before, abs=1e-9)
    own = (_bm25(chunks=2, holding=2, tf=1, length=3, avg_len=3.0)
           + _bm25(chunks=2, holding=1, tf=1, length=3, avg_len=3.0))
    assert after == pytest.approx(own, abs=1e-6)


def test_a_flood_into_one_base_does_not_sink_an_identifier_in_another_base(conn):
    # GIVEN two org bases in one collection, an identifier in one chunk of the first
    store.ensure_table(conn, "flood", DIM)
    ours = make_base(conn, "flood", org="acme")
    other = make_base(conn, "flood", org="acme")
    target = _document(conn, ours, "ticket ab12cd34 closed")
    for i in range(5):
        _document(conn, ours, f"ticket {i} opened")
    scope = [BaseScope(ours.id, "acme")]
    before = _text_score(conn, "flood", scope, "ab12cd34", target)

    # WHEN a writer of the other base floods it with chunks holding the identifier (the finding: a
    # flood of 2,600 chunks dropped another user's text_score for an identifier from 2.768 to 0.001)
    store.insert_chunks(conn, "flood", [_chunk(other, uuid.uuid4(), "ab12cd34 spam", i) for i in range(300)])
    after = _text_score(conn, "flood", scope, "ab12cd34", target)

    # THEN the score is unchanged, and is still that of a lexeme one chunk of six holds
    assert after == pytest.approx(before, abs=1e-9)
    assert after > 1.0


def test_a_search_over_several_bases_sums_their_statistics(conn):
    # GIVEN a reader of two bases of one collection, and a third base she does not reach
    store.ensure_table(conn, "summed", DIM)
    a, b, c = (make_base(conn, "summed", org="acme") for _ in range(3))
    hit = _document(conn, a, "lantern quay")
    _document(conn, b, "lantern pier")
    _document(conn, b, "harbour")
    _document(conn, c, "lantern lantern lantern")
    scope = [BaseScope(a.id, "acme"), BaseScope(b.id, "acme")]

    # THEN "lantern" is held by two of the three chunks she reaches (c does not count)
    score = _text_score(conn, "summed", scope, "lantern", hit)
    assert score == pytest.approx(_bm25(chunks=3, holding=2, tf=1, length=2, avg_len=5 / 3), abs=1e-6)


def test_a_pool_member_and_a_whole_base_together_count_only_what_she_reaches(conn):
    # GIVEN alice reaches an org base whole and, in the pool, one document shared with her
    store.ensure_table(conn, "mixed_scope", DIM)
    base = make_base(conn, "mixed_scope", org="acme")
    pool = _pool(conn, "mixed_scope")
    hit = _document(conn, base, "quarterly figures")
    _document(conn, pool, "quarterly forecast", recipients_of=["alice"])
    _document(conn, pool, "quarterly quarterly secret", recipients_of=["bob"])
    scope = [BaseScope(base.id, "acme"), BaseScope(pool.id, "acme", recipient="alice")]

    score = _text_score(conn, "mixed_scope", scope, "quarterly", hit)
    assert score == pytest.approx(_bm25(chunks=2, holding=2, tf=1, length=2, avg_len=2.0), abs=1e-6)
