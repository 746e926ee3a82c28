"""The reaper (issue 17): a document ``processing`` with no progress for longer than any stage could
take lost its message between stages. It is re-driven once from its last saved step, and if it
stalls again it becomes ``error`` with a sentence saying it can be retried, never processing forever.

Real stages, the real embedded PostgreSQL, moto's S3 and SQS."""

from __future__ import annotations

import uuid
from datetime import timedelta

import boto3
import pytest

from sluice.db import documents as doc_repo
from sluice.db.connection import transaction
from sluice.ingest import documents
from sluice.ingest.events import ObjectEvent, ParseJob, read_message
from sluice.ingest.recovery import NEVER_ARRIVED, STORED_FILE_GONE, StageQueues, interrupted, reap
from sluice.ingest.uploads import IntoBase, PresignRequest, accept
from sluice.storage import JobQueue, content_key, stage_key
from tests.integration.ingest.conftest import ALICE, paragraphs

STALE_AFTER = 7200


@pytest.fixture
def queues(harness) -> StageQueues:
    sqs = boto3.client("sqs", region_name="us-east-1")
    made = {name: JobQueue(sqs, sqs.create_queue(QueueName=f"{name}-{uuid.uuid4().hex[:6]}")["QueueUrl"])
            for name in ("ingest", "chunk", "embed")}
    return StageQueues(**made)


def age(doc_id: uuid.UUID, seconds: int = STALE_AFTER + 60) -> None:
    """The row last changed ``seconds`` ago: what a lost message leaves behind."""
    with transaction() as conn:
        conn.execute("UPDATE documents SET updated_at = now() - make_interval(secs => %s) WHERE id = %s",
                     (seconds, doc_id))


def received(queue: JobQueue) -> list[ObjectEvent | ParseJob]:
    sqs = boto3.client("sqs", region_name="us-east-1")
    out: list[ObjectEvent | ParseJob] = []
    for m in sqs.receive_message(QueueUrl=queue.queue_url, MaxNumberOfMessages=10).get("Messages", []):
        out += read_message(m["Body"])
        sqs.delete_message(QueueUrl=queue.queue_url, ReceiptHandle=m["ReceiptHandle"])
    return out


def sweep(h, queues):
    h.ctx.settings = h.ctx.settings.model_copy(update={"stale_after_seconds": STALE_AFTER})
    return reap(h.ctx, queues)


def test_a_lost_parse_job_is_sent_again_and_the_document_completes(harness, queues):
    h = harness
    doc_id = h.upload("notes.txt", paragraphs(6))  # stored, but its S3 event never reached a stage
    age(doc_id)

    reaped = sweep(h, queues)

    assert (reaped.redriven, reaped.failed, reaped.waiting) == (1, 0, 0)
    assert received(queues.ingest) == [ParseJob(doc_id, 1)]
    assert received(queues.chunk) == [] and received(queues.embed) == []
    assert h.document(doc_id).status == "processing"
    h.deliver(("ingest", ParseJob(doc_id, 1)))
    h.deliver(h.chunk_message(doc_id))
    h.deliver(h.embed_message(doc_id))
    assert h.document(doc_id).status == "done" and h.chunk_count(doc_id) > 0


def test_a_lost_chunk_message_resumes_from_the_parsed_text_not_from_the_file(harness, queues):
    h = harness
    doc_id = h.upload("notes.txt", paragraphs(6))
    h.deliver(h.parse_message(doc_id))  # the parsed artifact is written; its event is lost
    age(doc_id)

    assert sweep(h, queues).redriven == 1

    resumed = received(queues.chunk)
    assert [e.key for e in resumed if isinstance(e, ObjectEvent) and e.created] == [stage_key("parsed", doc_id, 1)]
    assert received(queues.ingest) == [] and received(queues.embed) == []


def test_a_lost_embed_message_resumes_from_the_chunks(harness, queues):
    h = harness
    doc_id = h.upload("notes.txt", paragraphs(6))
    h.deliver(h.parse_message(doc_id))
    h.deliver(h.chunk_message(doc_id))
    age(doc_id)

    assert sweep(h, queues).redriven == 1

    resumed = received(queues.embed)
    assert [e.key for e in resumed if isinstance(e, ObjectEvent)] == [stage_key("chunks", doc_id, 1)]
    h.deliver(("stage", resumed[0].key))
    doc = h.document(doc_id)
    assert doc.status == "done" and h.chunk_count(doc_id) == doc.chunk_count > 0


def test_a_document_that_stalls_again_after_its_redrive_fails_with_a_sentence_and_can_be_retried(harness, queues):
    h = harness
    doc_id = h.upload("notes.txt", paragraphs(6))
    h.deliver(h.parse_message(doc_id))
    age(doc_id)
    assert sweep(h, queues).redriven == 1
    received(queues.chunk)  # ... and that message is lost as well
    age(doc_id)

    reaped = sweep(h, queues)

    assert (reaped.redriven, reaped.failed) == (0, 1)
    doc = h.document(doc_id)
    assert doc.status == "error" and doc.stage == "parsing"
    assert doc.error_message == interrupted("parsing", STALE_AFTER)
    assert "retry" in doc.error_message.lower()
    assert received(queues.chunk) == []
    # AND a retry runs it again from the stored original
    with transaction() as conn:
        again = documents.retry_document(conn, ALICE, h.ctx.store, str(doc_id), h.ctx.settings)
    h.run_pipeline(doc_id, attempt=again.attempt)
    assert h.document(doc_id).status == "done"


def test_a_document_making_progress_is_left_alone(harness, queues):
    h = harness
    doc_id = h.upload("notes.txt", paragraphs(6))
    age(doc_id, STALE_AFTER - 120)

    assert sweep(h, queues).redriven == 0
    assert received(queues.ingest) == []
    assert h.document(doc_id).status == "processing"


def test_finished_documents_are_never_touched(harness, queues):
    h = harness
    doc_id = h.upload("notes.txt", paragraphs(6))
    h.run_pipeline(doc_id)
    age(doc_id)
    before = h.document(doc_id)

    assert sweep(h, queues).redriven == 0

    after = h.document(doc_id)
    assert (after.status, after.chunk_count, after.error_message) == ("done", before.chunk_count, None)


def test_a_presigned_upload_that_never_arrived_fails_saying_so(harness, queues):
    h = harness
    accepted = accept(h.intake(), ALICE, IntoBase(str(h.kb.id)), PresignRequest(filename="late.pdf"))
    age(accepted.document.id)

    reaped = sweep(h, queues)

    assert (reaped.redriven, reaped.failed) == (0, 1)
    doc = h.document(accepted.document.id)
    assert (doc.status, doc.error_message) == ("error", NEVER_ARRIVED)


def test_a_presigned_upload_that_landed_but_was_never_moved_is_resumed_from_where_it_landed(harness, queues):
    h = harness
    accepted = accept(h.intake(), ALICE, IntoBase(str(h.kb.id)), PresignRequest(filename="late.txt"))
    landed = f"incoming/{accepted.document.id}/late.txt"
    h.moto.s3.put_object(Bucket=h.moto.name, Key=landed, Body=paragraphs(4))  # its S3 event was lost
    age(accepted.document.id)

    assert sweep(h, queues).redriven == 1

    resumed = received(queues.ingest)
    assert [(e.key, e.created) for e in resumed if isinstance(e, ObjectEvent)] == [(landed, True)]
    h.deliver(("ingest", resumed[0]))  # moves it to the document's storage key
    assert h.ctx.store.head(h.document(accepted.document.id).storage_path or "") is not None


def test_a_document_whose_stored_file_is_gone_fails_at_once_rather_than_being_redriven(harness, queues):
    h = harness
    doc_id = h.upload("notes.txt", paragraphs(6))
    h.ctx.store.delete(h.document(doc_id).storage_path or "")
    age(doc_id)

    reaped = sweep(h, queues)

    assert (reaped.redriven, reaped.failed) == (0, 1)
    assert h.document(doc_id).error_message == STORED_FILE_GONE
    assert received(queues.ingest) == []


def test_a_stalled_document_behind_a_backlog_waits_instead_of_failing(harness, queues):
    h = harness
    doc_id = h.upload("notes.txt", paragraphs(6))
    age(doc_id)
    assert sweep(h, queues).redriven == 1  # its job is in the ingest queue now, behind others
    queues.ingest.send({"document_id": str(uuid.uuid4()), "attempt": 1})
    age(doc_id)

    reaped = sweep(h, queues)

    assert (reaped.failed, reaped.waiting) == (0, 1)
    assert h.document(doc_id).status == "processing"


def test_a_row_that_moves_while_the_reaper_looks_is_not_redriven(harness, queues):
    h = harness
    doc_id = h.upload("notes.txt", paragraphs(6))
    age(doc_id)
    with transaction() as conn:
        seen = doc_repo.stale_processing(conn, idle_for=timedelta(seconds=STALE_AFTER), limit=10)
    assert [d.id for d in seen] == [doc_id]
    h.deliver(h.parse_message(doc_id))  # a stage claims the row meanwhile

    with transaction() as conn:
        moved = doc_repo.update(conn, doc_id, expect_attempt=1, expect_updated_at=seen[0].updated_at,
                                redriven_attempt=1)
    assert moved is False


def test_the_parsed_text_of_a_reaped_document_is_kept_for_its_retry(harness, queues):
    # A failed row keeps what the user may read ("parsed text"), as any failed document does.
    h = harness
    doc_id = h.upload("notes.txt", paragraphs(6))
    h.deliver(h.parse_message(doc_id))
    for _ in range(2):
        age(doc_id)
        sweep(h, queues)
        received(queues.chunk)  # lost
    assert h.document(doc_id).status == "error"
    assert h.ctx.store.head(content_key(doc_id)) is not None


def test_the_sweep_is_bounded_and_oldest_first(harness, queues):
    h = harness
    ids = [h.upload(f"n{i}.txt", paragraphs(3, topic=f"t{i}")) for i in range(3)]
    for n, doc_id in enumerate(ids):
        age(doc_id, STALE_AFTER + 600 * (3 - n))  # ids[0] is the oldest
    h.ctx.settings = h.ctx.settings.model_copy(update={"stale_after_seconds": STALE_AFTER})

    reaped = reap(h.ctx, queues, limit=2)

    assert reaped.redriven == 2
    assert sorted(j.document_id for j in received(queues.ingest) if isinstance(j, ParseJob)) == sorted(ids[:2])

