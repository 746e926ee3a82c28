"""The reaper as the template wires it (issue 17): its schedule fires in the local runtime, it reads
the stage queues' URLs from its environment, and what it resumes runs through the real pumps.
``GET /kb/{id}/ingestion`` never reports indexing forever."""

from __future__ import annotations

import psycopg
import pytest

from sluice.ingest.recovery import NEVER_ARRIVED
from tests.e2e.test_upload_to_search import new_base, search, wait_done
from tests.unit.parsing.parsing_samples import docx_bytes

pytestmark = pytest.mark.e2e


def age(runtime, doc_id: str, **fields: object) -> None:
    """Nothing changed the row for three hours (and, with ``fields``, it stopped where they say)."""
    sets = "".join(f", {name} = %({name})s" for name in fields)
    with psycopg.connect(runtime.database_url, autocommit=True) as conn:
        conn.execute(f"UPDATE documents SET updated_at = now() - interval '3 hours'{sets} WHERE id = %(id)s",
                     {"id": doc_id, **fields})


def test_a_presigned_upload_never_posted_ends_in_error_and_the_base_stops_indexing(runtime, client_for):
    api = client_for("reaper-rita")
    kb = new_base(api)
    accepted = api.post(f"/kb/{kb['id']}/uploads", json={"filename": "never.pdf"}).json()
    assert api.get(f"/kb/{kb['id']}/ingestion").json()["indexing_status"] == "indexing"
    age(runtime, accepted["id"])

    runtime.scheduler.fire("ReaperFunction")

    doc = api.get(f"/rag/documents/{accepted['id']}").json()
    assert (doc["status"], doc["error_message"]) == ("error", NEVER_ARRIVED)
    ingestion = api.get(f"/kb/{kb['id']}/ingestion").json()
    assert ingestion["indexing_status"] == "complete" and ingestion["failed_count"] == 1


def test_a_document_whose_embed_message_was_lost_is_resumed_through_the_embed_queue(runtime, client_for):
    api = client_for("reaper-rita")
    kb = new_base(api)
    docx = docx_bytes(["The reaper resumes a lost embedding from the saved chunks of the document."])
    accepted = api.post(f"/kb/{kb['id']}/documents", files={"file": ("lost.docx", docx)}).json()
    first = wait_done(api, accepted["id"])
    assert first["status"] == "done"
    # WHEN the row is back where a lost embed message leaves it: processing, embedding, silent
    age(runtime, accepted["id"], status="processing", stage="embedding", completed_at=None)

    runtime.scheduler.fire("ReaperFunction")

    doc = wait_done(api, accepted["id"])
    assert (doc["status"], doc["chunk_count"]) == ("done", first["chunk_count"])
    hits = search(api, kb["collection_name"], "who resumes a lost embedding?")
    assert [h["document_id"] for h in hits][:1] == [accepted["id"]]
