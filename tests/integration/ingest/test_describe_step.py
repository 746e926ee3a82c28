"""The describe step (R-PARSE-6) at stage level: a 429 retried with backoff, calls bounded in number
at once, progress shown as describing n/m, the cap's images counted as undescribed."""

from __future__ import annotations

import threading
import uuid

import pytest

from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db.connection import transaction
from sluice.llm import chat_model_for
from sluice.retry import RetryPolicy
from sluice.storage import stage_key
from tests.fakes import FakeChatServer, Reply, serving
from tests.unit.parsing.parsing_samples import pdf_with_images


@pytest.fixture
def vision(harness, allow_endpoints):
    allow_endpoints("127.0.0.1")
    with serving(FakeChatServer()) as server:
        with transaction() as conn:
            harness.kb = kb_repo.update(conn, harness.kb.id, {"ingestion_config": {
                "chunk_size": 300, "image_description": {"enabled": True, "provider": "openai",
                                                          "model": "gpt-4o-mini", "base_url": server.base_url}}})
        waits: list[float] = []
        retry = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05, total_seconds=30, sleep=waits.append)
        harness.ctx.vision_model_for = lambda choice: chat_model_for(
            choice.provider, choice.model, base_url=choice.base_url, retry=retry)
        server.waits = waits  # type: ignore[attr-defined]
        yield server


def _run(harness, doc_id: uuid.UUID) -> None:
    harness.deliver(harness.parse_message(doc_id))
    assert harness.keys(stage_key("images", doc_id, 1)) == [stage_key("images", doc_id, 1)]
    harness.deliver(("stage", stage_key("images", doc_id, 1)))
    harness.deliver(harness.chunk_message(doc_id))
    harness.deliver(harness.embed_message(doc_id))


def test_a_429_is_retried_with_backoff_and_the_image_described(harness, vision):
    vision.script = [Reply(status=429, headers={"Retry-After": "0.02"})]
    doc_id = harness.upload("report.pdf", pdf_with_images())

    _run(harness, doc_id)

    doc = harness.document(doc_id)
    assert doc.status == "done"
    assert (doc.images_described, doc.images_undescribed, doc.image_note) == (2, 0, None)
    assert len(vision.requests) == 3  # two images, one of them asked twice
    assert len(vision.waits) == 1 and vision.waits[0] >= 0.02  # the provider's Retry-After, waited


def test_progress_is_describing_n_of_m_and_calls_are_bounded(harness, vision):
    harness.ctx.settings = harness.ctx.settings.model_copy(update={"image_description_concurrency": 1})
    seen: list[tuple[str, int | None, int | None]] = []
    in_flight, most = [0], [0]
    lock = threading.Lock()
    build = harness.ctx.vision_model_for

    class Watched:
        def __init__(self, model):
            self.provider, self.model, self._model = model.provider, model.model, model

        def complete(self, *args, **kwargs):
            with lock:
                in_flight[0] += 1
                most[0] = max(most[0], in_flight[0])
            with transaction() as conn:
                row = doc_repo.get(conn, doc_id)
            seen.append((row.stage, row.progress_done, row.progress_total))
            try:
                return self._model.complete(*args, **kwargs)
            finally:
                with lock:
                    in_flight[0] -= 1

    harness.ctx.vision_model_for = lambda choice: Watched(build(choice))
    doc_id = harness.upload("report.pdf", pdf_with_images())

    harness.deliver(harness.parse_message(doc_id))
    harness.deliver(("stage", stage_key("images", doc_id, 1)))

    # Each call sees the step's progress so far; the step ends at describing 2/2.
    assert seen[0] == ("describing", 0, 2) and len(seen) == 2
    assert seen[1][0] == "describing" and seen[1][1] in (0, 1)
    row = harness.document(doc_id)
    assert (row.stage, row.progress_done, row.progress_total) == ("describing", 2, 2)
    assert most[0] == 1  # IMAGE_DESCRIPTION_CONCURRENCY=1: never two calls at once
    harness.deliver(harness.chunk_message(doc_id))
    harness.deliver(harness.embed_message(doc_id))
    assert harness.document(doc_id).status == "done"


def test_images_over_the_cap_are_counted_undescribed(harness, vision):
    harness.ctx.settings = harness.ctx.settings.model_copy(update={"image_description_max_per_doc": 1})
    doc_id = harness.upload("report.pdf", pdf_with_images())

    _run(harness, doc_id)

    doc = harness.document(doc_id)
    assert doc.status == "done" and len(vision.requests) == 1
    assert doc.image_note == ("1 of 2 images was not described: more images than the 1 a document may have "
                              "described.")


def test_turned_off_before_the_step_describes_nothing_and_says_so(harness, vision):
    doc_id = harness.upload("report.pdf", pdf_with_images())
    harness.deliver(harness.parse_message(doc_id))
    with transaction() as conn:
        kb_repo.update(conn, harness.kb.id, {"ingestion_config": {"chunk_size": 300}})

    harness.deliver(("stage", stage_key("images", doc_id, 1)))
    harness.deliver(harness.chunk_message(doc_id))
    harness.deliver(harness.embed_message(doc_id))

    doc = harness.document(doc_id)
    assert doc.status == "done" and vision.requests == []
    assert doc.image_note == "2 of 2 images were not described: image description was turned off for the collection."


def test_deleting_the_document_removes_its_images_artifact(harness, vision):
    from sluice.ingest import documents

    doc_id = harness.upload("report.pdf", pdf_with_images())
    harness.deliver(harness.parse_message(doc_id))
    assert harness.keys("stage/images/") == [stage_key("images", doc_id, 1)]

    harness.ctx.store.delete_many(documents.stored_objects(harness.document(doc_id)))

    assert harness.keys("stage/images/") == []
