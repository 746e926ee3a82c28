"""Failures (R-DOC-4, R-PARSE-5), retry (R-DOC-5) and delete while indexing (R-DOC-6)."""

from __future__ import annotations

import threading

import pytest

from sluice.db.connection import transaction
from sluice.errors import EmbeddingAuthenticationError, EmbeddingProviderError, ValidationError
from sluice.ingest import chunk, documents
from sluice.ingest.dead_letters import on_dead_letter
from sluice.ingest.events import ParseJob
from tests.integration.ingest.conftest import ALICE, paragraphs
from tests.unit.parsing.parsing_samples import pdf_bytes


def kill_after(h, batches: int, exc: Exception) -> None:
    def before(call: int) -> None:
        if call > batches:
            raise exc

    h.embedder.before_batch = before


def retry(h, doc_id):
    with transaction() as conn:
        doc = documents.retry_document(conn, ALICE, h.ctx.store, str(doc_id), h.ctx.settings)
    return doc


def test_a_refused_credential_half_way_fails_the_row_and_a_retry_completes_it(harness):
    h = harness
    doc_id = h.upload("long.txt", paragraphs(16))
    h.deliver(h.parse_message(doc_id))
    h.deliver(h.chunk_message(doc_id))

    # WHEN the provider refuses the credential after half of the batches
    kill_after(h, 2, EmbeddingAuthenticationError("local", "all-MiniLM-L6-v2"))
    h.deliver(h.embed_message(doc_id))

    # THEN the row is error with the R-DOC-4 summary, and no chunk of it is stored
    doc = h.document(doc_id)
    assert doc.status == "error" and doc.stage == "embedding"
    assert doc.error_message == (
        "The document could not be indexed (AuthenticationError) - check the collection's embedding "
        "credential, then retry the upload. The worker log has the full error."
    )
    assert h.chunk_count(doc_id) == 0 and h.chunk_count() == 0

    # AND a retry re-reads the stored original and completes it
    h.embedder.before_batch = None
    again = retry(h, doc_id)
    assert again.status == "processing" and again.attempt == 2 and again.error_message is None
    h.run_pipeline(doc_id, attempt=2)
    doc = h.document(doc_id)
    assert doc.status == "done" and doc.chunk_count > 4 and h.chunk_count(doc_id) == doc.chunk_count


def test_a_provider_that_keeps_failing_ends_in_the_dlq_with_its_summary(harness):
    h = harness
    doc_id = h.upload("long.txt", paragraphs(12))
    h.deliver(h.parse_message(doc_id))
    h.deliver(h.chunk_message(doc_id))
    kill_after(h, 1, EmbeddingProviderError("local", "all-MiniLM-L6-v2"))

    # three deliveries fail and go back to the queue: the row stays processing, nothing is stored
    for _ in range(3):
        with pytest.raises(EmbeddingProviderError):
            h.deliver(h.embed_message(doc_id))
        assert h.document(doc_id).status == "processing" and h.chunk_count() == 0

    # the DLQ handler turns the innermost summary into the row's error
    _, key = h.embed_message(doc_id)
    on_dead_letter(h.ctx, "embedding", h.object_event(key))
    doc = h.document(doc_id)
    assert doc.status == "error"
    assert doc.error_message.startswith("The document could not be indexed (ProviderError)")
    # a second copy of the dead letter changes nothing
    on_dead_letter(h.ctx, "embedding", h.object_event(key))
    assert h.document(doc_id).error_message == doc.error_message


def test_a_crashing_stage_without_a_summary_names_its_stage(harness, monkeypatch):
    h = harness
    doc_id = h.upload("x.txt", paragraphs(3))
    monkeypatch.setattr(chunk, "split_text", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom at host")))
    h.deliver(h.parse_message(doc_id))
    with pytest.raises(RuntimeError):
        h.deliver(h.chunk_message(doc_id))
    _, key = h.chunk_message(doc_id)
    on_dead_letter(h.ctx, "chunking", h.object_event(key))
    doc = h.document(doc_id)
    assert doc.status == "error" and "RuntimeError while chunking" in doc.error_message
    assert "host" not in doc.error_message


def test_retry_refuses_a_document_that_did_not_fail_or_has_no_file(harness):
    h = harness
    doc_id = h.upload("ok.txt", paragraphs(3))
    with pytest.raises(ValidationError) as processing:
        retry(h, doc_id)
    assert processing.value.status == 400
    h.run_pipeline(doc_id)
    with pytest.raises(ValidationError):
        retry(h, doc_id)

    # a failed document whose stored original is gone
    failing = h.upload("bad.txt", paragraphs(3))
    kill_after(h, 0, EmbeddingAuthenticationError("local", "m"))
    h.run_pipeline(failing)
    assert h.document(failing).status == "error"
    h.ctx.store.delete(h.document(failing).storage_path)
    with pytest.raises(ValidationError) as gone:
        retry(h, failing)
    assert "no stored file" in gone.value.message


def test_a_late_parse_job_of_a_failed_attempt_changes_nothing(harness):
    h = harness
    doc_id = h.upload("late.txt", paragraphs(4))
    kill_after(h, 0, EmbeddingAuthenticationError("local", "m"))
    h.run_pipeline(doc_id)
    h.embedder.before_batch = None
    retry(h, doc_id)
    h.run_pipeline(doc_id, attempt=2)
    count = h.document(doc_id).chunk_count
    h.deliver(("ingest", ParseJob(doc_id, 1)))
    h.deliver(h.embed_message(doc_id, 1))
    assert h.document(doc_id).status == "done" and h.chunk_count(doc_id) == count


@pytest.mark.parametrize("block_on_batch", [1, 3])
def test_deleting_a_document_while_it_embeds_leaves_no_chunks(harness, block_on_batch):
    h = harness
    doc_id = h.upload("race.txt", paragraphs(8))
    h.deliver(h.parse_message(doc_id))
    h.deliver(h.chunk_message(doc_id))
    entered, deleted = threading.Event(), threading.Event()

    def block(call: int) -> None:
        if call == block_on_batch:
            entered.set()
            assert deleted.wait(30), "the delete never committed"

    h.embedder.before_batch = block
    worker = threading.Thread(target=h.deliver, args=(h.embed_message(doc_id),))
    worker.start()
    assert entered.wait(30)

    # WHEN the document is deleted (and committed) while its embed stage runs
    with transaction() as conn:
        doc = documents.delete_document(conn, ALICE, str(doc_id))
    h.ctx.store.delete_many(documents.stored_objects(doc))
    deleted.set()
    worker.join(30)

    # THEN the stage finds the row gone and nothing of the document remains
    assert not worker.is_alive()
    assert h.document(doc_id) is None
    assert h.chunk_count(doc_id) == 0 and h.chunk_count() == 0
    assert h.keys("rag/") == [] and h.keys("text/") == []


def test_deleting_a_done_document_removes_its_chunks(harness):
    h = harness
    doc_id = h.upload("store.txt", paragraphs(6))
    h.run_pipeline(doc_id)
    assert h.chunk_count(doc_id) > 0
    with transaction() as conn:
        documents.delete_document(conn, ALICE, str(doc_id))
    assert h.chunk_count(doc_id) == 0 and h.document(doc_id) is None


def test_pdf_chunks_carry_page_spans(harness):
    h = harness
    pages = [f"Page {n} is about the audit ledger and the signing keys rotated on day {n}. " * 8 for n in (1, 2, 3)]
    doc_id = h.upload("ledger.pdf", pdf_bytes(pages))
    h.run_pipeline(doc_id)
    doc = h.document(doc_id)
    assert doc.status == "done", doc.error_message
    with transaction() as conn:
        rows = conn.execute(f"SELECT page_start, page_end FROM rag_{h.kb.collection_name}").fetchall()
    assert len(rows) >= 3 and all(r["page_start"] is not None and r["page_start"] <= r["page_end"] for r in rows)
    assert min(r["page_start"] for r in rows) == 1 and max(r["page_end"] for r in rows) == 3


def test_the_stage_that_finds_its_row_gone_removes_the_text_written_for_it(harness):
    h = harness
    doc_id = h.upload("gone.txt", paragraphs(4))
    h.deliver(h.parse_message(doc_id))
    # the row is deleted after the parse stage wrote its text (the delete's own cleanup ran before)
    from sluice.db import documents as doc_repo

    with transaction() as conn:
        doc_repo.delete(conn, doc_id)
    assert h.keys("text/") == [f"text/{doc_id}.txt"]
    h.deliver(h.chunk_message(doc_id))
    assert h.keys("text/") == [] and h.keys("stage/chunks/") == []
    h.deliver(h.embed_message(doc_id))
    assert h.chunk_count() == 0


def test_an_object_over_the_ceiling_is_refused_at_parse_and_deleted(harness):
    h = harness
    doc_id = h.upload("big.txt", paragraphs(4))
    storage_path = h.document(doc_id).storage_path
    h.ctx.settings = h.ctx.settings.model_copy(update={"max_upload_size_mb": 0})  # as if it arrived presigned
    h.deliver(h.parse_message(doc_id))
    doc = h.document(doc_id)
    assert doc.status == "error" and doc.error_message.startswith("The file is larger than the 0 MB limit")
    assert h.keys(storage_path) == [] and doc.storage_path is None


def test_a_plan_the_collection_no_longer_allows_fails_the_document_with_its_reason(harness):
    h = harness
    doc_id = h.upload("plan.txt", paragraphs(4), ingestion={"chunk_overlap": 100})
    with transaction() as conn:  # the collection's size shrank below twice the upload's overlap since
        conn.execute("""UPDATE knowledge_bases SET ingestion_config = '{"chunk_size": 150}' WHERE id = %s""",
                     (h.kb.id,))
    h.deliver(h.parse_message(doc_id))
    h.deliver(h.chunk_message(doc_id))
    doc = h.document(doc_id)
    # the parse stage reads the merged plan first (its parser settings, R-PARSE-7): refused before reading
    assert doc.status == "error" and doc.stage == "parsing"
    assert doc.error_message == (
        "The chunking settings are not valid. Chunk overlap (100) must be at most half the chunk size (150); "
        "a larger overlap repeats most of every chunk in the next one.")


def test_a_presigned_file_that_is_not_what_its_name_says_is_refused_at_parse_and_deleted(harness):
    # GIVEN a presigned upload for a PDF, and a Windows program posted in its place
    from sluice.ingest.uploads import IntoBase, PresignRequest, accept

    h = harness
    accepted = accept(h.intake(), ALICE, IntoBase(str(h.kb.id)), PresignRequest(filename="invoice.pdf", size=1024))
    key = accepted.upload["fields"]["key"]
    h.ctx.store.put(key, b"MZ\x90\x00" + b"\x00" * 1020)

    # WHEN its S3 event moves it to the document's key, whose event reaches the parse stage
    h.deliver(("ingest", h.object_event(key)))
    h.deliver(h.parse_message(accepted.document.id))

    # THEN the row says why, the object is gone (and the row names none: no file, no retry), and
    # nothing was indexed
    doc = h.document(accepted.document.id)
    assert doc.status == "error"
    assert "invoice.pdf is named as a PDF" in doc.error_message and "Windows program" in doc.error_message
    assert h.keys(key) == [] and h.keys(accepted.document.storage_path) == [] and doc.storage_path is None
    assert h.chunk_count(accepted.document.id) == 0


def test_an_inbox_drop_that_is_not_what_its_name_says_is_refused_with_its_reason(harness):
    # The dropped object is the caller's and stays: deleting it would fire ObjectRemoved,
    # which removes the document (R-UP-3) and with it the row that says why it was refused.
    h = harness
    key = f"inbox/{h.kb.id}/reports/q3.docx"
    h.ctx.store.put(key, b"just some text pretending to be a Word file\n" * 20)
    h.deliver(("ingest", h.object_event(key)))
    with transaction() as conn:
        rows = conn.execute("SELECT status, error_message FROM documents WHERE source_path LIKE %s",
                            ("%/reports/q3.docx",)).fetchall()
    assert len(rows) == 1 and rows[0]["status"] == "error"
    assert "q3.docx" in rows[0]["error_message"]
    assert h.keys(key) == [key]
    assert h.chunk_count() == 0
