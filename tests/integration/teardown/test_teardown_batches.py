"""A base too big for one call: the chunks go in bounded batches from a table a sibling keeps, the
objects in DeleteObjects calls of at most 1,000 keys, every step hands back ``more`` when its
budget is spent (the workflow calls it again), and the receipt still counts each thing once."""

from __future__ import annotations

import uuid

import pytest

from sluice.db import documents as doc_repo
from sluice.db.connection import transaction
from sluice.storage import ObjectStore, content_key, stage_key
from sluice.teardown import STEPS, TeardownContext, request_base_teardown, run_step, summary
from sluice.teardown import steps as td_steps
from sluice.vectors import store
from tests.fakes import DIM
from tests.integration.teardown.conftest import World

DOCS = 42  # three batches of the objects step (20 documents a batch here)
CHUNKS_PER_DOC = 3
INBOX_OBJECTS = 1_100  # one listing of two pages, deleted in two calls


class RecordingStore(ObjectStore):
    """The real store, remembering how many keys each DeleteObjects call carried."""

    def __init__(self, inner: ObjectStore) -> None:
        super().__init__(inner._s3, inner.bucket, inner.kms_key_id)  # noqa: SLF001 - the same client
        self.calls: list[int] = []

    def _delete_objects(self, batch: list[dict[str, str]]) -> list[str]:
        self.calls.append(len(batch))
        return super()._delete_objects(batch)


def filed(world: World, kb, count: int) -> tuple[list[uuid.UUID], dict[str, int]]:
    """``count`` indexed documents of ``kb`` written as the stages leave them: a row, its chunks, its
    stored original, parsed text and chunk artifact."""
    ids = [uuid.uuid4() for _ in range(count)]
    objects: dict[str, int] = {}
    with transaction() as conn:
        store.ensure_table(conn, kb.collection_name, DIM)
        for n, doc_id in enumerate(ids):
            original = f"rag/{kb.collection_name}/{doc_id}/file_{n}.txt"
            doc_repo.insert(conn, id=doc_id, kb_id=kb.id, org_id=kb.org_id, collection_name=kb.collection_name,
                            filename=f"file_{n}.txt", storage_path=original, status="done", stage="done",
                            vector_document_id=doc_id, chunk_count=CHUNKS_PER_DOC)
            store.insert_chunks(conn, kb.collection_name, [
                store.ChunkRow(document_id=doc_id, kb_id=kb.id, org_id=kb.org_id, chunk_index=i,
                               content=f"chunk {i} of {n}", embedding=[1.0] + [0.0] * (DIM - 1))
                for i in range(CHUNKS_PER_DOC)])
            for key, body in ((original, b"original %d" % n), (content_key(doc_id), b"text"),
                              (stage_key("chunks", doc_id, 1), b"[]")):
                world.moto.s3.put_object(Bucket=world.moto.name, Key=key, Body=body)
                objects[key] = len(body)
    return ids, objects


def test_a_big_base_goes_in_bounded_batches_and_each_thing_is_counted_once(world: World,
                                                                            monkeypatch: pytest.MonkeyPatch):
    name = "bulk_name"
    kb, sibling = world.base(name, org="acme"), world.base(name, org="globex")
    ours, objects = filed(world, kb, DOCS)
    theirs, their_objects = filed(world, sibling, 2)
    for i in range(INBOX_OBJECTS):
        key = f"inbox/{kb.id}/dropped/{i:05d}.txt"
        world.moto.s3.put_object(Bucket=world.moto.name, Key=key, Body=b"x" * (i % 7))
        objects[key] = i % 7
    assert len(objects) > 1_200

    monkeypatch.setattr(td_steps, "CHUNKS_PER_BATCH", 50)
    monkeypatch.setattr(td_steps, "DOCUMENTS_PER_BATCH", 20)
    recording = RecordingStore(world.teardowns.store)
    ctx = TeardownContext(uow=transaction, store=recording,
                          settings=world.teardowns.settings.model_copy(update={"teardown_step_budget_seconds": 0}))
    with transaction() as conn:
        td = request_base_teardown(conn, world.writer_of(kb), str(kb.id), ctx.settings)
    assert td.drop_table is False  # the sibling keeps the table: only our chunks go, in batches

    calls: dict[str, int] = {}
    for step in STEPS:  # as the workflow does: again while the task says there is more
        calls[step] = 1
        while run_step(ctx, step, td.id)["more"]:
            calls[step] += 1

    # 126 chunks by 50; 42 rows by 20, then the inbox
    assert calls == {"chunks": 3, "sources": 1, "objects": 4, "release": 1}
    assert max(recording.calls) == 1_000 and sum(recording.calls) == len(objects)
    assert recording.calls[-2:] == [1_000, INBOX_OBJECTS - 1_000]  # the inbox listing, split
    with transaction() as conn:
        done_td = request_receipt(conn, td.id)
        assert doc_repo.count_existing(conn, ours) == 0 and doc_repo.count_existing(conn, theirs) == 2
        assert store.count_chunks_of(conn, name, [kb.id]) == 0
        assert store.count_chunks_of(conn, name, [sibling.id]) == 2 * CHUNKS_PER_DOC
    assert summary(done_td)["removed"] == {"documents": DOCS, "chunks": DOCS * CHUNKS_PER_DOC,
                                           "objects": len(objects), "bytes": sum(objects.values()),
                                           "sync_sources": 0}
    assert done_td.state == "done"
    assert world.objects() == their_objects  # everything of ours went, nothing of theirs


def request_receipt(conn, teardown_id: uuid.UUID):
    from sluice.db import teardowns as td_repo

    td = td_repo.get(conn, teardown_id)
    assert td is not None
    return td
