"""R-DOC-7: duplicate, late and out-of-order deliveries of every stage's message change nothing."""

from __future__ import annotations

import random

import pytest

from tests.integration.ingest.conftest import paragraphs


def expected_chunks(h, doc_id) -> int:
    doc = h.document(doc_id)
    assert doc.status == "done", doc
    return doc.chunk_count


def test_every_message_delivered_twice_in_order(harness):
    h = harness
    doc_id = h.upload("policy.txt", paragraphs(12))
    for message in (h.parse_message(doc_id), h.chunk_message(doc_id), h.embed_message(doc_id)):
        h.deliver(message)
        h.deliver(message)
    doc = h.document(doc_id)
    assert doc.status == "done" and doc.stage == "done" and doc.chunk_count > 3
    assert h.chunk_count(doc_id) == doc.chunk_count
    # one artifact per stage for the one attempt, and one set of chunk indexes
    assert len(h.keys("stage/parsed/")) == len(h.keys("stage/chunks/")) == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_duplicates_redelivered_late_in_shuffled_order(harness, seed):
    h = harness
    doc_id = h.upload("policy.md", paragraphs(10))
    h.run_pipeline(doc_id)
    count = expected_chunks(h, doc_id)
    assert h.chunk_count(doc_id) == count
    before = h.document(doc_id)

    # WHEN every message arrives again, twice, in a random order
    late = [h.parse_message(doc_id), h.chunk_message(doc_id), h.embed_message(doc_id)] * 2
    random.Random(seed).shuffle(late)
    for message in late:
        h.deliver(message)

    # THEN nothing changed
    after = h.document(doc_id)
    assert after.status == "done" and after.chunk_count == count and after.completed_at == before.completed_at
    assert h.chunk_count(doc_id) == count
    assert h.chunk_count() == count


def test_duplicates_interleaved_while_the_pipeline_runs(harness):
    h = harness
    doc_id = h.upload("notes.txt", paragraphs(9))
    parse, chunk, embed = h.parse_message(doc_id), h.chunk_message(doc_id), h.embed_message(doc_id)
    for message in (parse, parse, chunk, parse, chunk, embed, chunk, embed, parse):
        h.deliver(message)
    count = expected_chunks(h, doc_id)
    assert h.chunk_count(doc_id) == count == h.chunk_count()
    # each stage's chunks carry consecutive indexes once
    from sluice.db.connection import transaction

    with transaction() as conn:
        rows = conn.execute(f"SELECT chunk_index FROM rag_{h.kb.collection_name} ORDER BY chunk_index").fetchall()
    assert [r["chunk_index"] for r in rows] == list(range(count))


def test_a_message_for_an_older_attempt_changes_nothing(harness):
    h = harness
    doc_id = h.upload("a.txt", paragraphs(6))
    h.run_pipeline(doc_id)
    count = expected_chunks(h, doc_id)
    # a retry-style second attempt on the same row
    from sluice.db import documents as doc_repo
    from sluice.db.connection import transaction

    with transaction() as conn:
        doc_repo.reopen(conn, doc_id, 2)
    h.run_pipeline(doc_id, attempt=2)
    assert expected_chunks(h, doc_id) == count and h.chunk_count(doc_id) == count
    # late messages of attempt 1 arrive after attempt 2 finished
    for message in (h.parse_message(doc_id), h.chunk_message(doc_id, 1), h.embed_message(doc_id, 1)):
        h.deliver(message)
    doc = h.document(doc_id)
    assert doc.attempt == 2 and doc.status == "done" and h.chunk_count(doc_id) == count


def test_chunks_carry_their_metadata(harness):
    h = harness
    from datetime import date

    doc_id = h.upload("meta.txt", paragraphs(5), organizational_unit="Security", document_type="policy",
                      document_date=date(2024, 3, 1))
    h.run_pipeline(doc_id)
    doc = h.document(doc_id)
    from sluice.db.connection import transaction

    with transaction() as conn:
        rows = conn.execute(f"SELECT * FROM rag_{h.kb.collection_name} ORDER BY chunk_index").fetchall()
    assert len(rows) == doc.chunk_count > 1
    for i, r in enumerate(rows):
        assert r["document_id"] == doc_id and r["kb_id"] == h.kb.id and r["org_id"] is None
        assert r["chunk_index"] == i and r["source"] == "upload" and r["filename"] == "meta.txt"
        assert r["document_type"] == "policy" and r["organizational_unit"] == "Security"
        assert r["document_date"] == date(2024, 3, 1) and r["content_hash"] == doc.content_hash
        assert len(r["content"]) <= 300  # the collection's chunk_size
        assert r["metadata"]["mime"] == "text/plain"
