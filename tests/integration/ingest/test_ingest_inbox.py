"""S3 drops (R-UP-3): inbox/<kb_id>/<path> ingests, overwrite replaces, delete removes,
whatever the order and number of the events (R-DOC-7), and the replaced rows are retired (R-DOC-6)."""

from __future__ import annotations

import random

import pytest

from sluice.db import documents as doc_repo
from sluice.db.connection import transaction
from sluice.storage import stage_key
from tests.integration.ingest.conftest import paragraphs


def inbox_key(h, path: str = "team/handbook.txt") -> str:
    return f"inbox/{h.kb.id}/{path}"


def put(h, key: str, data: bytes):
    h.moto.s3.put_object(Bucket=h.moto.name, Key=key, Body=data, ServerSideEncryption="aws:kms",
                         SSEKMSKeyId=h.moto.key_id)
    return h.object_event(key)


def rows(h, key: str):
    with transaction() as conn:
        return doc_repo.by_address(conn, h.kb.id, f"s3://{h.moto.name}/{key}")


def finish(h) -> None:
    """Deliver the chunk and embed events of every row still processing."""
    for doc in rows(h, inbox_key(h)):
        if doc.status == "processing" and h.keys(stage_key("parsed", doc.id, doc.attempt)):
            h.deliver(h.chunk_message(doc.id, doc.attempt))
            h.deliver(h.embed_message(doc.id, doc.attempt))


def content_of_chunks(h) -> str:
    with transaction() as conn:
        found = conn.execute(
            f"SELECT content FROM rag_{h.kb.collection_name} ORDER BY chunk_index").fetchall()
    return "\n".join(r["content"] for r in found)


def test_a_drop_is_ingested_with_its_address(harness):
    h = harness
    key = inbox_key(h)
    h.deliver(("ingest", put(h, key, paragraphs(5, "first"))))
    finish(h)
    [doc] = rows(h, key)
    assert doc.status == "done" and doc.source == "s3_drop" and doc.filename == "handbook.txt"
    assert doc.source_path == f"s3://{h.moto.name}/{key}" and doc.kb_id == h.kb.id
    assert h.chunk_count(doc.id) == doc.chunk_count > 0
    with transaction() as conn:
        assert {r["source_path"] for r in conn.execute(
            f"SELECT source_path FROM rag_{h.kb.collection_name}").fetchall()} == {doc.source_path}


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_three_quick_overwrites_leave_one_document_with_the_last_content(harness, seed):
    h = harness
    key = inbox_key(h)
    h.deliver(("ingest", put(h, key, paragraphs(4, "original"))))
    finish(h)
    [first] = rows(h, key)
    assert first.status == "done"

    # WHEN the object is overwritten three times before any event is handled, and the
    # events (with a duplicate each) arrive in any order
    events = [put(h, key, paragraphs(4 + n, f"version{n}")) for n in (1, 2, 3)]
    late = [("ingest", e) for e in events] * 2
    random.Random(seed).shuffle(late)
    for message in late:
        h.deliver(message)
    finish(h)

    # THEN one document remains, done, holding the last content; the replaced row and its chunks are gone
    [doc] = rows(h, key)
    assert doc.status == "done" and doc.id != first.id
    assert doc.source_etag == events[-1].etag
    assert h.chunk_count(first.id) == 0
    assert h.chunk_count() == h.chunk_count(doc.id) == doc.chunk_count
    text = content_of_chunks(h)
    assert "version3" in text and "version2" not in text and "original" not in text


def test_overwrites_handled_one_by_one_retire_each_replaced_row(harness):
    h = harness
    key = inbox_key(h)
    ids = []
    for n in range(3):
        h.deliver(("ingest", put(h, key, paragraphs(3 + n, f"v{n}"))))
        finish(h)
        [doc] = rows(h, key)
        ids.append(doc.id)
        assert doc.status == "done" and h.chunk_count() == doc.chunk_count
    assert len(set(ids)) == 3
    # the text copies of the retired rows went with them
    assert h.keys("text/") == [f"text/{ids[-1]}.txt"]
    # the inbox object itself is the caller's: it stays
    assert h.keys("inbox/") == [key]


def test_delete_removes_the_document_and_a_stale_delete_changes_nothing(harness):
    h = harness
    key = inbox_key(h)
    created = put(h, key, paragraphs(4))
    h.deliver(("ingest", created))
    finish(h)
    [doc] = rows(h, key)

    # a removal event while the object is still there (an older removal arriving late) changes nothing
    h.deliver(("ingest", h.object_event(key, created=False)))
    assert [r.id for r in rows(h, key)] == [doc.id] and h.chunk_count() == doc.chunk_count

    h.moto.s3.delete_object(Bucket=h.moto.name, Key=key)
    removed = h.object_event(key, created=False)
    h.deliver(("ingest", removed))
    assert rows(h, key) == [] and h.chunk_count() == 0

    # a late copy of the creation, and of the removal, change nothing
    h.deliver(("ingest", created))
    h.deliver(("ingest", removed))
    assert rows(h, key) == [] and h.chunk_count() == 0


def test_sequencers_order_events_where_s3_sends_them(harness):
    h = harness
    key = inbox_key(h)
    from dataclasses import replace

    h.deliver(("ingest", replace(put(h, key, paragraphs(3, "new")), sequencer="0062E9B2F1A3")))
    finish(h)
    [doc] = rows(h, key)
    # a removal S3 sequenced before the write that opened the row changes nothing
    h.deliver(("ingest", replace(h.object_event(key, created=False), sequencer="0062E9B2F0FF")))
    assert [r.id for r in rows(h, key)] == [doc.id]


def test_drops_outside_a_base_are_ignored(harness):
    h = harness
    import uuid

    for key in (f"inbox/{uuid.uuid4()}/a.txt", "inbox/not-a-uuid/a.txt", f"inbox/{h.kb.id}/"):
        h.deliver(("ingest", put(h, key, b"hello there") if not key.endswith("/") else h.object_event(key)))
    with transaction() as conn:
        assert conn.execute("SELECT count(*) AS n FROM documents").fetchone()["n"] == 0


def test_an_archive_dropped_again_replaces_the_archive_and_its_members_and_deleting_it_removes_them(harness):
    from tests.integration.ingest.test_ingest_formats import zip_bytes

    h = harness
    key = inbox_key(h, "bundle.zip")

    def settle() -> list:
        with transaction() as conn:
            docs = doc_repo.list_for_kb(conn, h.kb.id, limit=50, offset=0)
        for doc in docs:
            if doc.status == "processing" and doc.source_path and "!/" in doc.source_path:
                h.run_pipeline(doc.id)
        with transaction() as conn:
            return doc_repo.list_for_kb(conn, h.kb.id, limit=50, offset=0)

    h.deliver(("ingest", put(h, key, zip_bytes({"a.txt": paragraphs(3, "alpha"), "b.txt": paragraphs(3, "beta")}))))
    first = settle()
    assert len(first) == 3 and all(d.status == "done" for d in first)

    h.deliver(("ingest", put(h, key, zip_bytes({"a.txt": paragraphs(3, "gamma"), "b.txt": paragraphs(3, "beta")}))))
    second = settle()
    assert len(second) == 3 and all(d.status == "done" for d in second)
    assert not {d.id for d in first} & {d.id for d in second}
    assert sorted(d.source_path for d in second) == sorted(d.source_path for d in first)
    text = content_of_chunks(h)
    assert "gamma" in text and "alpha" not in text
    assert h.chunk_count() == sum(d.chunk_count for d in second)

    # a member the next copy no longer holds is gone with the copy that held it, object and all
    b_member = next(d for d in second if d.source_path.endswith("!/b.txt"))
    h.deliver(("ingest", put(h, key, zip_bytes({"a.txt": paragraphs(3, "delta")}))))
    third = settle()
    assert sorted(d.source_path.rsplit("!/", 1)[-1] for d in third if "!/" in d.source_path) == ["a.txt"]
    assert len(third) == 2 and all(d.status == "done" for d in third)
    text = content_of_chunks(h)
    assert "delta" in text and "beta" not in text and "gamma" not in text
    assert h.keys(b_member.storage_path) == []

    # deleting the archive removes it and every member
    h.moto.s3.delete_object(Bucket=h.moto.name, Key=key)
    h.deliver(("ingest", h.object_event(key, created=False)))
    with transaction() as conn:
        assert doc_repo.list_for_kb(conn, h.kb.id, limit=50, offset=0) == []
    assert h.chunk_count() == 0 and h.keys(f"rag/{h.kb.collection_name}/") == []
