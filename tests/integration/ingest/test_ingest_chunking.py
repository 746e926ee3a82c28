"""The pipeline chunks with the collection's plan, bounded by the embedder's window (R-CHUNK-1),
and reports embedding progress as n/m (R-DOC-1)."""

from __future__ import annotations

from sluice.chunking import max_chunk_chars
from sluice.db import knowledge_bases as kb_repo
from sluice.db.connection import transaction
from tests.integration.ingest.conftest import paragraphs


def contents(h) -> list[str]:
    with transaction() as conn:
        return [r["content"] for r in conn.execute(
            f"SELECT content FROM rag_{h.kb.collection_name} ORDER BY document_id, chunk_index").fetchall()]


def test_a_derived_chunk_size_fits_the_embedder_window(harness):
    h = harness
    with transaction() as conn:
        conn.execute("UPDATE knowledge_bases SET ingestion_config = '{}'::jsonb WHERE id = %s", (h.kb.id,))
        h.kb = kb_repo.get(conn, h.kb.id)
    doc_id = h.upload("long.txt", paragraphs(40))
    h.run_pipeline(doc_id)
    window = max_chunk_chars(256)  # all-MiniLM-L6-v2 reads 256 word pieces
    assert window < 2500
    chunks = contents(h)
    assert len(chunks) == h.document(doc_id).chunk_count > 1
    assert max(len(c) for c in chunks) <= window
    assert max(len(c) for c in chunks) > window * 0.6  # the window is used, not a tiny default


def test_an_upload_override_is_the_plan_its_document_is_split_with(harness):
    h = harness
    doc_id = h.upload("small.md", paragraphs(10), ingestion={"chunk_size": 100, "chunk_overlap": 0})
    other = h.upload("default.md", paragraphs(10))
    h.run_pipeline(doc_id)
    h.run_pipeline(other)
    small, default = h.document(doc_id), h.document(other)
    assert small.chunk_count > default.chunk_count
    with transaction() as conn:
        longest = conn.execute(f"SELECT max(length(content)) AS n FROM rag_{h.kb.collection_name} "
                               "WHERE document_id = %s", (doc_id,)).fetchone()["n"]
    assert longest <= 100


def test_embedding_reports_n_of_m(harness):
    h = harness
    doc_id = h.upload("progress.txt", paragraphs(16))
    h.deliver(h.parse_message(doc_id))
    h.deliver(h.chunk_message(doc_id))
    seen: list[tuple[str, int | None, int | None]] = []

    def look(call: int) -> None:
        doc = h.document(doc_id)
        seen.append((doc.stage, doc.progress_done, doc.progress_total))

    h.embedder.before_batch = look
    h.deliver(h.embed_message(doc_id))
    doc = h.document(doc_id)
    batches = -(-doc.chunk_count // 2)  # the harness embeds 2 chunks a call
    assert batches >= 3
    # the stage stays a word; the batches done and due are counted beside it
    assert seen == [("embedding", None, None)] + [("embedding", n, batches) for n in range(1, batches)]
    assert doc.stage == "done"


def test_a_document_over_the_chunk_bound_fails_before_anything_is_embedded(harness):
    h = harness
    h.ctx.settings = h.ctx.settings.model_copy(update={"max_chunks_per_document": 5})
    doc_id = h.upload("many.txt", paragraphs(40), ingestion={"chunk_size": 100, "chunk_overlap": 0})
    h.run_pipeline(doc_id)
    doc = h.document(doc_id)
    assert doc.status == "error" and doc.stage == "chunking"
    assert "more than the 5 one document may have" in doc.error_message
    assert "raise the chunk size (now 100)" in doc.error_message
    assert h.embedder.calls == 0 and h.chunk_count(doc_id) == 0
