"""Issue 37 items 3 and 4: a retry and an archive's unpacked members are admitted as an upload is.

Probed: with uploads at 429 three retries answered 202 and each OCR'd again; with indexing paused an
upload got 503 and a retry 202. A 15-member zip uploaded directly was refused ("holds 16
documents"), the same zip presigned became 16 documents in 2 s.
"""

from __future__ import annotations

import pytest

from sluice.db import documents as doc_repo
from sluice.db.connection import transaction
from sluice.errors import ConflictError, EmbeddingAuthenticationError, IndexingPausedError, RateLimitError
from sluice.ingest import documents
from sluice.ingest.uploads import IntoBase, PresignRequest, accept
from tests.integration.ingest.conftest import ALICE, paragraphs
from tests.integration.ingest.test_ingest_formats import zip_bytes


def retry(h, doc_id):
    with transaction() as conn:
        return documents.retry_document(conn, ALICE, h.ctx.store, str(doc_id), h.ctx.settings)


def failed_document(h, name: str = "bad.txt"):
    doc_id = h.upload(name, paragraphs(3))
    h.embedder.before_batch = lambda call: (_ for _ in ()).throw(EmbeddingAuthenticationError("local", "m"))
    h.run_pipeline(doc_id)
    h.embedder.before_batch = None
    assert h.document(doc_id).status == "error"
    return doc_id


def uploads_this_minute(user: str = "alice") -> int:
    with transaction() as conn:
        row = conn.execute("SELECT count(*) AS n FROM upload_events WHERE user_id = %s", (user,)).fetchone()
    return int(row["n"])


def use_up_the_minute(h) -> None:
    with transaction() as conn:
        conn.execute("INSERT INTO upload_events (user_id, accepted_at) SELECT 'alice', clock_timestamp() "
                     "FROM generate_series(1, %s)", (h.ctx.settings.upload_rate_per_minute,))


def test_a_retry_is_refused_with_503_while_indexing_is_paused(harness):
    h = harness
    doc_id = failed_document(h)
    h.ctx.settings = h.ctx.settings.model_copy(update={"indexing_paused": True})
    with pytest.raises(IndexingPausedError) as paused:
        retry(h, doc_id)
    assert paused.value.status == 503
    assert h.document(doc_id).status == "error" and h.document(doc_id).attempt == 1


def test_a_retry_counts_as_an_upload_and_is_refused_with_429_in_the_uploads_sentence(harness):
    h = harness
    doc_id = failed_document(h)
    before = uploads_this_minute()
    retry(h, doc_id)
    assert uploads_this_minute() == before + 1  # counted like an upload

    h.embedder.before_batch = lambda call: (_ for _ in ()).throw(EmbeddingAuthenticationError("local", "m"))
    h.run_pipeline(doc_id, attempt=2)
    use_up_the_minute(h)
    with pytest.raises(RateLimitError) as limited:
        retry(h, doc_id)
    assert limited.value.status == 429
    assert limited.value.message.startswith("Too many uploads: a user may upload 10 documents a minute")
    assert h.document(doc_id).attempt == 2


def test_a_documents_retries_are_capped_with_a_sentence(harness):
    h = harness
    h.ctx.settings = h.ctx.settings.model_copy(update={"document_max_retries": 2, "upload_rate_per_minute": 100})
    doc_id = failed_document(h)
    h.embedder.before_batch = lambda call: (_ for _ in ()).throw(EmbeddingAuthenticationError("local", "m"))
    for attempt in (2, 3):
        retry(h, doc_id)
        h.run_pipeline(doc_id, attempt=attempt)
    with pytest.raises(ConflictError) as capped:
        retry(h, doc_id)
    assert capped.value.status == 409
    assert capped.value.message == ("This document was retried 2 times, the most a document may be "
                                    "(DOCUMENT_MAX_RETRIES); upload it again instead.")
    assert h.document(doc_id).attempt == 3


def _zip_of(n: int) -> bytes:
    return zip_bytes({f"notes/{i:02d}.txt": paragraphs(2, f"topic {i}") for i in range(n)})


def presigned_archive(h, data: bytes, name: str = "bundle.zip"):
    taken = accept(h.intake(), ALICE, IntoBase(str(h.kb.id)), PresignRequest(filename=name, size=len(data)))
    key = taken.upload["fields"]["key"]
    h.ctx.store.put(key, data)
    h.deliver(("ingest", h.object_event(key)))  # the arrival moves it under rag/
    h.deliver(h.parse_message(taken.document.id))
    return taken.document.id


def members(h) -> int:
    with transaction() as conn:
        return doc_repo.count_for_kb(conn, h.kb.id)


def test_a_presigned_archive_over_the_minute_is_refused_at_unpack_in_the_direct_uploads_words(harness):
    h = harness
    h.ctx.settings = h.ctx.settings.model_copy(update={"private_doc_cap": 100})
    archive = presigned_archive(h, _zip_of(15))
    doc = h.document(archive)
    assert doc.status == "error"
    assert doc.error_message.startswith("This upload holds 16 documents, and a private knowledge base takes at "
                                        "most 10 a minute; split it into smaller archives.")
    assert members(h) == 1


def test_a_presigned_archive_s_members_are_recorded_and_refused_when_the_minute_is_spent(harness):
    h = harness
    h.ctx.settings = h.ctx.settings.model_copy(update={"private_doc_cap": 100})
    archive = presigned_archive(h, _zip_of(4))
    assert h.document(archive).status == "done"
    assert members(h) == 5 and uploads_this_minute() == 5  # the archive and each member

    # five more fit the minute's ten: a second archive of five members (six documents) does not
    second = presigned_archive(h, _zip_of(5), name="second.zip")
    doc = h.document(second)
    assert doc.status == "error"
    assert doc.error_message.startswith("Too many uploads: a user may upload 10 documents a minute")
    assert members(h) == 6 and uploads_this_minute() == 6


def test_a_direct_archive_s_members_counted_at_upload_are_not_counted_again_at_unpack(harness):
    h = harness
    h.ctx.settings = h.ctx.settings.model_copy(update={"private_doc_cap": 100})
    archive = h.upload("bundle.zip", _zip_of(3))
    assert uploads_this_minute() == 4
    h.deliver(h.parse_message(archive))
    h.deliver(h.parse_message(archive))  # a redelivered unpack
    assert h.document(archive).status == "done" and members(h) == 4
    assert uploads_this_minute() == 4
