"""A document's status changes only through the named transitions of ``sluice.db.documents``, each
setting the same fields every time (issue 31 item 1); ``update`` refuses a status."""

from __future__ import annotations

import uuid

import pytest

from sluice.db import documents as doc_repo
from sluice.db.documents import DocumentStatus


def _row(conn, **values):
    return doc_repo.insert(conn, kb_id=None, org_id=None, collection_name="transitions", filename="a.txt",
                           **values)


def test_update_refuses_a_status(conn):
    doc = _row(conn)
    with pytest.raises(ValueError, match="named transition"):
        doc_repo.update(conn, doc.id, status="done")
    with pytest.raises(ValueError, match="completed_at"):
        doc_repo.update(conn, doc.id, completed_at=None)
    assert doc_repo.get(conn, doc.id).status is DocumentStatus.PROCESSING


def test_a_failure_is_finished_wherever_it_happens(conn):
    doc = _row(conn)
    doc_repo.update(conn, doc.id, last_failure="the parse stage timed out")
    assert doc_repo.mark_failed(conn, doc.id, "It could not be stored.", stage="queued")
    failed = doc_repo.get(conn, doc.id)
    assert failed.status == "error" and failed.status is DocumentStatus.ERROR
    assert failed.error_message == "It could not be stored." and failed.stage == "queued"
    assert failed.completed_at is not None and failed.last_failure is None


def test_a_conditional_failure_leaves_another_attempt_alone(conn):
    doc = _row(conn, attempt=2)
    assert not doc_repo.mark_failed(conn, doc.id, "late", expect_attempt=1)
    assert doc_repo.get(conn, doc.id).status == "processing"


def test_done_then_reopened_then_done(conn):
    doc = _row(conn)
    assert doc_repo.mark_done(conn, doc.id, chunk_count=3, vector_document_id=doc.id)
    done = doc_repo.get(conn, doc.id)
    assert (done.status, done.stage, done.chunk_count, done.error_message) == ("done", "done", 3, None)
    assert done.completed_at is not None
    assert doc_repo.reopen(conn, doc.id, 2)
    again = doc_repo.get(conn, doc.id)
    assert (again.status, again.stage, again.attempt, again.completed_at) == ("processing", "queued", 2, None)


def test_the_bulk_failures_finish_their_rows(conn):
    working, finished = _row(conn), _row(conn)
    doc_repo.mark_done(conn, finished.id, chunk_count=1, vector_document_id=finished.id)
    assert doc_repo.fail_in_flight(conn, "The runtime restarted.") >= 1
    assert doc_repo.get(conn, working.id).status == "error"
    assert doc_repo.get(conn, working.id).completed_at is not None
    assert doc_repo.get(conn, finished.id).status == "done"
    assert doc_repo.fail_unfiled(conn, "transitions", "The table was dropped.") == 1
    gone = doc_repo.get(conn, finished.id)
    assert (gone.status, gone.chunk_count, gone.vector_document_id) == ("error", 0, None)


def test_a_status_read_is_the_enum():
    assert DocumentStatus("error") is DocumentStatus.ERROR and {s.value for s in DocumentStatus} == {
        "processing", "done", "error"}
    assert uuid.UUID(int=0)  # the module imports cleanly without a database
