"""Document routes and ingestion through the local runtime: status counts (R-DOC-3), listing,
parsed text and download (R-DOC-1), delete (R-DOC-6), retry (R-DOC-5), override validation
(R-CHUNK-2), S3 drops (R-UP-3) and the DLQ handler (R-PARSE-5)."""

from __future__ import annotations

import json
import time
import uuid

import boto3
import httpx
import pytest

from tests.e2e.test_upload_to_search import new_base, wait_done

pytestmark = pytest.mark.e2e

TEXT = (b"# Rotation policy\n\nThe on-call engineer rotates the signing keys every ninety days "
        b"and records the rotation in the audit ledger.\n")


def s3(runtime):
    return boto3.client("s3", endpoint_url=runtime.moto_url, region_name="us-east-1")


def upload(api: httpx.Client, kb: dict, name: str = "policy.md", data: bytes = TEXT, **form) -> httpx.Response:
    return api.post(f"/kb/{kb['id']}/documents", files={"file": (name, data)}, data=form)


def wait_until(check, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError("condition never held")


def test_the_listing_filters_by_status_and_counts_what_it_filters(runtime, client_for):
    """The console opens a base of 100,000 documents on the page of its failed ones (R-UI-2): the
    filter is the server's, and total counts the filtered documents, not the base's."""
    api = client_for("erin")
    kb = new_base(api)
    good = upload(api, kb, "good.md").json()["id"]
    bad = upload(api, kb, "broken.pdf", b"%PDF-1.7 this is not a PDF at all").json()["id"]
    assert wait_done(api, good)["status"] == "done"
    assert wait_done(api, bad)["status"] == "error"

    failed = api.get(f"/kb/{kb['id']}/documents", params={"status": "error"}).json()
    assert [d["id"] for d in failed["documents"]] == [bad] and failed["total"] == 1 and failed["next_offset"] is None
    indexed = api.get(f"/kb/{kb['id']}/documents", params={"status": "done", "limit": 1}).json()
    assert [d["id"] for d in indexed["documents"]] == [good] and indexed["total"] == 1
    assert api.get(f"/kb/{kb['id']}/documents", params={"status": "processing"}).json()["total"] == 0
    assert api.get(f"/kb/{kb['id']}/documents").json()["total"] == 2
    refused = api.get(f"/kb/{kb['id']}/documents", params={"status": "failed"})
    assert refused.status_code == 400 and "status" in json.dumps(refused.json()["error"])


def test_status_counts_listing_content_file_and_delete(runtime, client_for):
    api = client_for("erin")
    kb = new_base(api)
    ids = [upload(api, kb, f"policy{i}.md").json()["id"] for i in range(3)]
    for doc_id in ids:
        assert wait_done(api, doc_id)["status"] == "done"

    status = api.get(f"/kb/{kb['id']}/ingestion").json()
    assert status["indexing_status"] == "complete"
    assert (status["processing_count"], status["indexed_count"], status["failed_count"]) == (0, 3, 0)
    assert status["document_count"] == 3 and status["chunk_count"] >= 3
    info = api.get(f"/rag/collections/{kb['collection_name']}/info").json()
    assert {k: info[k] for k in status if k not in ("kb_id",)} == {k: v for k, v in status.items() if k != "kb_id"}

    page = api.get(f"/kb/{kb['id']}/documents", params={"limit": 2}).json()
    assert page["total"] == 3 and len(page["documents"]) == 2 and page["next_offset"] == 2
    rest = api.get(f"/kb/{kb['id']}/documents", params={"limit": 2, "offset": 2}).json()
    assert len(rest["documents"]) == 1 and rest["next_offset"] is None
    assert {d["id"] for d in page["documents"] + rest["documents"]} == set(ids)
    doc = page["documents"][0]
    for field in ("id", "kb_id", "collection_name", "filename", "filesize", "filetype", "status", "stage",
                  "error_message", "document_id", "chunk_count", "storage_path", "source_path", "content_hash",
                  "organizational_unit", "uploaded_by", "created_at", "completed_at"):
        assert field in doc
    assert doc["stage"] == "done" and doc["uploaded_by"] == "erin"

    content = api.get(f"/rag/documents/{ids[0]}/content").json()
    assert "rotates the signing keys every ninety days" in content["content"]
    link = api.get(f"/rag/documents/{ids[0]}/file").json()
    assert link["expires_in"] <= 900
    assert httpx.get(link["url"]).content == TEXT

    # delete: row, chunks and stored object go
    stored = api.get(f"/rag/documents/{ids[0]}").json()["storage_path"]
    resp = api.delete(f"/rag/documents/{ids[0]}")
    assert resp.status_code == 200
    assert api.get(f"/rag/documents/{ids[0]}").status_code == 404
    keys = [o["Key"] for o in s3(runtime).list_objects_v2(Bucket=runtime.bucket, Prefix="rag/").get("Contents", [])]
    assert stored not in keys
    status = api.get(f"/kb/{kb['id']}/ingestion").json()
    assert status["document_count"] == 2

    # another user reaches none of it
    stranger = client_for("mallory2")
    for path in (f"/kb/{kb['id']}/documents", f"/kb/{kb['id']}/ingestion", f"/rag/documents/{ids[1]}/content",
                 f"/rag/documents/{ids[1]}/file", f"/rag/collections/{kb['collection_name']}/info"):
        assert stranger.get(path).status_code == 404
    assert stranger.delete(f"/rag/documents/{ids[1]}").status_code == 404
    assert stranger.post(f"/rag/documents/{ids[1]}/retry").status_code == 404


def test_override_is_validated_merged_before_any_object_or_row(runtime, client_for):
    api = client_for("frank")
    kb = new_base(api)
    bad = {
        json.dumps({"chunk_overlap": 4096}): {"ingestion_config.chunk_size", "ingestion_config.chunk_overlap"},
        json.dumps({"chunk_size": 5000}): {"ingestion_config.chunk_size"},
        json.dumps({"chunking_strategy": "sentences"}): {"ingestion_config.chunking_strategy"},
    }
    for override, fields in bad.items():
        resp = upload(api, kb, ingestion=override)
        assert resp.status_code == 400, resp.text
        assert fields <= set(resp.json()["error"]["details"]["fields"]), resp.json()
        resp = api.post(f"/kb/{kb['id']}/uploads", json={"filename": "a.md", "ingestion": json.loads(override)})
        assert resp.status_code == 400 and fields <= set(resp.json()["error"]["details"]["fields"])
    # nothing was stored and no row exists
    assert api.get(f"/kb/{kb['id']}/documents").json()["total"] == 0
    listed = s3(runtime).list_objects_v2(Bucket=runtime.bucket, Prefix=f"rag/{kb['collection_name']}/")
    assert listed.get("KeyCount", 0) == 0

    # the collection's own config: 422 naming ingestion_config.<field>
    resp = api.post("/kb", json={"name": "Too big", "ingestion_config": {"chunk_size": 5000}})
    assert resp.status_code == 422 and "ingestion_config.chunk_size" in resp.json()["error"]["details"]["fields"]
    resp = api.post("/kb", json={"name": "Pair", "ingestion_config": {"chunk_size": 300, "chunk_overlap": 300}})
    assert resp.status_code == 422
    assert {"ingestion_config.chunk_size", "ingestion_config.chunk_overlap"} <= set(
        resp.json()["error"]["details"]["fields"])

    # a good override is used: chunk_size 120 gives more, smaller chunks
    long_text = b"\n\n".join(b"Paragraph %d says the signing keys rotate every ninety days." % i for i in range(8))
    doc = wait_done(api, upload(api, kb, "small.txt", long_text, ingestion=json.dumps({"chunk_size": 120})
                                ).json()["id"])
    assert doc["status"] == "done" and doc["chunk_count"] >= 4


def test_supported_formats(runtime, client_for):
    from sluice.parsing import SUPPORTED_EXTENSIONS

    body = client_for("gina").get("/rag/supported-formats").json()
    assert body["extensions"] == dict(sorted(SUPPORTED_EXTENSIONS.items()))
    assert ".pdf" in body["knowledge_base"] and ".png" in body["chat_only"]
    assert body["knowledge_base_with_ocr"] == [".jpeg", ".jpg", ".png", ".tif", ".tiff"]


def test_inbox_drop_overwrite_three_times_and_delete(runtime, client_for):
    api = client_for("hank")
    kb = new_base(api)
    client = s3(runtime)
    key = f"inbox/{kb['id']}/shared/handbook.md"

    def put(text: str) -> None:
        client.put_object(Bucket=runtime.bucket, Key=key, Body=text.encode(), ServerSideEncryption="aws:kms")

    def docs() -> list[dict]:
        return api.get(f"/kb/{kb['id']}/documents").json()["documents"]

    put("The original handbook says badges are grey.")
    [first] = wait_until(lambda: [d for d in docs() if d["status"] == "done"] or None)
    assert first["source"] == "s3_drop" and first["source_path"] == f"s3://{runtime.bucket}/{key}"

    # WHEN it is overwritten three times quickly
    for n in (1, 2, 3):
        put(f"Version {n} of the handbook says badges are colour {n}.")
    runtime.wait_idle()

    # THEN one document, the last content, the replaced rows gone
    def settled():
        found = docs()
        return found if len(found) == 1 and found[0]["status"] == "done" and found[0]["id"] != first["id"] else None

    [doc] = wait_until(settled)
    assert "Version 3" in api.get(f"/rag/documents/{doc['id']}/content").json()["content"]
    status = api.get(f"/kb/{kb['id']}/ingestion").json()
    assert status["document_count"] == 1 and status["chunk_count"] == doc["chunk_count"]
    import psycopg

    with psycopg.connect(runtime.database_url) as conn:
        stored = conn.execute(f"SELECT content FROM rag_{kb['collection_name']}").fetchall()
    assert stored and all("Version 3" in c for (c,) in stored)

    # AND deleting the object removes the document
    client.delete_object(Bucket=runtime.bucket, Key=key)
    wait_until(lambda: docs() == [] or None)
    assert api.get(f"/kb/{kb['id']}/ingestion").json()["chunk_count"] == 0


def test_a_stage_that_keeps_failing_is_marked_by_the_dlq_and_retried(runtime, client_for):
    from sluice.wiring import stage_context

    api = client_for("ivy")
    kb = new_base(api)
    ctx = stage_context()
    real = ctx.embedder_for

    class Broken:
        def __init__(self, inner):
            self.inner = inner
            self.spec, self.max_input_tokens = inner.spec, inner.max_input_tokens

        def embed_documents(self, texts):
            raise ConnectionError("connect to http://10.0.0.7:8080 refused")

        def embed_query(self, text):
            return self.inner.embed_query(text)

    ctx.embedder_for = lambda spec: Broken(real(spec))
    try:
        doc_id = upload(api, kb, "flaky.md").json()["id"]
        doc = wait_done(api, doc_id)  # three deliveries fail, the DLQ handler marks the row
    finally:
        ctx.embedder_for = real
    assert doc["status"] == "error", doc
    assert doc["error_message"].startswith("The document could not be indexed (ConnectionError while embedding)")
    assert "10.0.0.7" not in doc["error_message"]
    status = api.get(f"/kb/{kb['id']}/ingestion").json()
    assert status["indexing_status"] == "complete" and status["failed_count"] == 1

    # a retry re-reads the stored original and completes it
    resp = api.post(f"/rag/documents/{doc_id}/retry")
    assert resp.status_code == 202 and resp.json()["status"] == "processing" and resp.json()["attempt"] == 2
    doc = wait_done(api, doc_id)
    assert doc["status"] == "done" and doc["chunk_count"] > 0 and doc["error_message"] is None
    assert api.post(f"/rag/documents/{doc_id}/retry").status_code == 400
    assert api.post(f"/rag/documents/{uuid.uuid4()}/retry").status_code == 404
