"""The reaper (sluice.ingest.recovery) beside a teardown: documents of a base being torn down are
neither resumed nor failed by it, and nothing of theirs comes back — whether the reaper runs after
the request committed, between the teardown's steps, or read its stalled rows before the delete
and acts on them after it. A sibling base's stalled document on the same name is still resumed.

Real stages, the real embedded PostgreSQL, moto's S3 and SQS."""

from __future__ import annotations

import uuid

import boto3
import pytest

from sluice.config import get_settings
from sluice.db import documents as doc_repo
from sluice.db.connection import transaction
from sluice.db.documents import Document
from sluice.ingest.events import ObjectEvent, ParseJob, read_message
from sluice.ingest.recovery import StageQueues, reap, reap_listed
from sluice.ingest.routing import on_ingest_item, on_stage_artifact
from sluice.storage import JobQueue, stage_key
from sluice.teardown import request_base_teardown, run_all, run_step, summary
from tests.integration.teardown.conftest import World, text

STALE_AFTER = 7200


@pytest.fixture
def queues(world: World) -> StageQueues:
    sqs = boto3.client("sqs", region_name="us-east-1")
    made = {name: JobQueue(sqs, sqs.create_queue(QueueName=f"td-{name}-{uuid.uuid4().hex[:6]}")["QueueUrl"])
            for name in ("ingest", "chunk", "embed")}
    return StageQueues(**made)


def received(queues: StageQueues) -> list[ObjectEvent | ParseJob]:
    sqs = boto3.client("sqs", region_name="us-east-1")
    out: list[ObjectEvent | ParseJob] = []
    for queue in (queues.ingest, queues.chunk, queues.embed):
        for m in sqs.receive_message(QueueUrl=queue.queue_url, MaxNumberOfMessages=10).get("Messages", []):
            out += read_message(m["Body"])
            sqs.delete_message(QueueUrl=queue.queue_url, ReceiptHandle=m["ReceiptHandle"])
    return out


def about(event: ObjectEvent | ParseJob) -> str:
    """The document a stage message is for (a parse job names it; an artifact's key carries it)."""
    if isinstance(event, ParseJob):
        return str(event.document_id)
    return event.key.rsplit("/", 1)[-1].split(".")[0]


def stalled(world: World, kb, topic: str, stop_after: str) -> uuid.UUID:
    """A document of ``kb`` whose next message was lost after ``stop_after`` (upload, parse or chunk),
    idle for longer than the reaper waits."""
    doc_id = world.upload(kb, f"{topic}.txt", text(topic, 3))
    with transaction() as conn:
        doc = doc_repo.get(conn, doc_id)
    assert doc is not None and doc.storage_path
    if stop_after in ("parse", "chunk"):
        on_ingest_item(world.stages, world.event(doc.storage_path))
    if stop_after == "chunk":
        on_stage_artifact(world.stages, world.event(stage_key("parsed", doc_id, 1)))
    with transaction() as conn:
        conn.execute("UPDATE documents SET updated_at = now() - make_interval(secs => %s) WHERE id = %s",
                     (STALE_AFTER + 60, doc_id))
        row = doc_repo.get(conn, doc_id)
    assert row is not None and row.status == "processing"
    return doc_id


def sweep(world: World, queues: StageQueues, listed: list[Document] | None = None):
    """One reaper sweep; over ``listed`` (the rows as an earlier read found them) when given."""
    world.stages.settings = world.stages.settings.model_copy(update={"stale_after_seconds": STALE_AFTER})
    return reap(world.stages, queues) if listed is None else reap_listed(world.stages, queues, listed)


def rows(doc_ids: list[uuid.UUID]) -> int:
    with transaction() as conn:
        return doc_repo.count_existing(conn, doc_ids)


def test_the_reaper_neither_resumes_nor_fails_the_documents_of_a_base_being_torn_down(world: World, queues):
    name = "reaped_name"
    kb = world.base(name, org="acme")
    sibling = world.base(name, org="globex")
    world.ingest(kb, "indexed.txt", text("indexed"))
    ours = [stalled(world, kb, f"ours_{stop}", stop) for stop in ("upload", "parse", "chunk")]
    theirs = stalled(world, sibling, "theirs", "parse")
    objects_of_ours = world.objects_of(set(ours))
    assert len(objects_of_ours) >= 6  # originals, parsed text, stage artifacts

    with transaction() as conn:  # committed: rows gone, name reserved, no step has run yet
        td = request_base_teardown(conn, world.writer_of(kb), str(kb.id), get_settings())

    reaped = sweep(world, queues)  # after the request, before any step

    assert (reaped.redriven, reaped.failed, reaped.waiting) == (1, 0, 0)  # the sibling's only
    assert [about(e) for e in received(queues)] == [str(theirs)]
    assert rows(ours) == 0

    run_step(world.teardowns, "chunks", td.id)
    assert sweep(world, queues).redriven == 0 and received(queues) == []  # between the steps
    done = run_all(world.teardowns, td.id)

    assert done.state == "done"
    assert summary(done)["removed"]["documents"] == 4 and done.left_over == {
        "documents": 0, "chunks": 0, "documents_with_objects": 0, "sync_sources": 0}
    reaped = sweep(world, queues)  # and after: nothing of the base is there to find
    assert (reaped.redriven, reaped.failed) == (0, 0) and received(queues) == []
    assert rows(ours) == 0 and world.objects_of(set(ours)) == {}
    assert not [k for k in world.objects() if str(kb.id) in k or any(str(d) in k for d in ours)]
    with transaction() as conn:  # the sibling's row is still the reaper's to resume, and was
        kept = doc_repo.get(conn, theirs)
    assert kept is not None and kept.status == "processing" and kept.redriven_attempt == 1


@pytest.mark.parametrize("teardown_runs", ["request only", "request and steps"])
def test_a_reaper_that_read_the_rows_before_the_delete_changes_nothing_after_it(
        world: World, queues, teardown_runs: str):
    """The reaper lists the stalled rows, the teardown's request (and maybe its whole workflow) runs
    in between, then the reaper acts on what it listed: its conditional updates find no row, so it
    sends no message and fails nothing, and no row or object comes back. A cleared default base."""
    kb = world.base(f"reaped_default_{teardown_runs[-1]}", org="acme", is_default=True)
    ours = [stalled(world, kb, f"late_{stop}", stop) for stop in ("upload", "parse", "chunk")]
    with transaction() as conn:
        listed = doc_repo.stale_processing(conn, idle_for=_idle(), limit=500)
    assert {d.id for d in listed} >= set(ours)

    with transaction() as conn:
        td = request_base_teardown(conn, world.writer_of(kb), str(kb.id), get_settings())
    if teardown_runs == "request and steps":
        assert run_all(world.teardowns, td.id).state == "done"

    reaped = sweep(world, queues, listed)

    assert (reaped.redriven, reaped.failed, reaped.waiting) == (0, 0, 0)
    assert received(queues) == []
    assert rows(ours) == 0
    with transaction() as conn:
        assert doc_repo.count_for_kb(conn, kb.id) == 0
    done = run_all(world.teardowns, td.id)
    assert done.state == "done" and done.documents_removed == 3
    assert world.objects_of(set(ours)) == {} and world.objects() == {}


def _idle():
    from datetime import timedelta

    return timedelta(seconds=STALE_AFTER)
