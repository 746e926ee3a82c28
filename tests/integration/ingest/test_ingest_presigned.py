"""A presigned upload (R-UP-2) lands under incoming/ and only its first arrival becomes the stored
original: the POST's fields stay valid until they expire, and a replay must never replace what
was indexed, nor what /file serves."""

from __future__ import annotations

import hashlib

from sluice.db.connection import transaction
from sluice.ingest.documents import download_url
from sluice.ingest.uploads import IntoBase, PresignRequest, accept
from tests.integration.ingest.conftest import ALICE, paragraphs


def presign(h, name: str, size: int):
    accepted = accept(h.intake(), ALICE, IntoBase(str(h.kb.id)), PresignRequest(filename=name, size=size))
    return accepted.document, accepted.upload


def post(h, upload: dict, data: bytes):
    """What S3 does with the client's POST: the object under the policy's key, then its event."""
    key = upload["fields"]["key"]
    h.ctx.store.put(key, data)
    h.deliver(("ingest", h.object_event(key)))


def test_the_first_arrival_is_indexed_and_a_replayed_post_changes_nothing(harness):
    h = harness
    original = paragraphs(4, "original")
    doc, upload = presign(h, "notes.txt", len(original))
    assert upload["fields"]["key"] == f"incoming/{doc.id}/notes.txt"
    assert doc.storage_path.startswith(f"rag/{h.kb.collection_name}/")

    post(h, upload, original)
    assert h.keys("incoming/") == []
    assert h.ctx.store.get(doc.storage_path) == original
    h.run_pipeline(doc.id)
    done = h.document(doc.id)
    assert done.status == "done" and done.content_hash == hashlib.sha256(original).hexdigest()

    # Probed: the same fields posted again replaced the indexed object, and /file served it.
    post(h, upload, paragraphs(4, "replacement never checked"))
    assert h.keys("incoming/") == []
    assert h.ctx.store.get(doc.storage_path) == original
    again = h.document(doc.id)
    assert (again.status, again.content_hash, again.chunk_count) == ("done", done.content_hash, done.chunk_count)
    link = download_url(h.ctx.store, again, expires_in=60)
    assert "filename%2A%3DUTF-8%27%27notes.txt" in link


def test_a_post_for_a_deleted_document_is_deleted(harness):
    h = harness
    doc, upload = presign(h, "gone.txt", 10)
    with transaction() as conn:
        conn.execute("DELETE FROM documents WHERE id = %s", (doc.id,))
    post(h, upload, b"words that nobody expects")
    assert h.keys("incoming/") == [] and h.keys("rag/") == []


def test_an_arrival_over_the_ceiling_fails_the_document_and_is_not_kept(harness):
    h = harness
    h.ctx.settings = h.ctx.settings.model_copy(update={"max_upload_size_mb": 1})
    doc, upload = presign(h, "big.txt", 10)
    post(h, upload, b"x" * (1024 * 1024 + 1))
    failed = h.document(doc.id)
    assert failed.status == "error" and "larger than the 1 MB limit" in failed.error_message
    assert h.keys("incoming/") == [] and h.keys("rag/") == [] and failed.storage_path is None
