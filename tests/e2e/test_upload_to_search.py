"""One document from upload to search, through the real event path of the local runtime."""

from __future__ import annotations

import time
import uuid

import boto3
import httpx
import pytest

from tests.unit.parsing.parsing_samples import docx_bytes, pdf_bytes

pytestmark = pytest.mark.e2e


def wait_done(api: httpx.Client, doc_id: str, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = api.get(f"/rag/documents/{doc_id}").json()
        if doc["status"] != "processing":
            return doc
        time.sleep(0.3)
    raise AssertionError(f"document {doc_id} still processing: {doc}")


def new_base(api: httpx.Client) -> dict:
    resp = api.post("/kb", json={"name": f"Base {uuid.uuid4().hex[:6]}"})
    assert resp.status_code == 201, resp.text
    return resp.json()


def search(api: httpx.Client, collection: str, query: str, top_k: int = 4) -> list[dict]:
    resp = api.post("/rag/search", json={"query": query, "collections": [collection], "top_k": top_k})
    assert resp.status_code == 200, resp.text
    return resp.json()["results"]


def test_presigned_pdf_is_encrypted_indexed_and_found(runtime, client_for):
    # GIVEN a personal base and a real PDF
    api = client_for("alice")
    kb = new_base(api)
    pdf = pdf_bytes(["Apache Tika is a toolkit for detecting and extracting metadata and text from files.",
                     "A second page: the toolkit reads over a thousand file types."])

    # WHEN the client asks for a presigned POST and posts the file straight to S3
    resp = api.post(f"/kb/{kb['id']}/uploads", json={"filename": "testPDF.pdf", "size": len(pdf)})
    assert resp.status_code == 202, resp.text
    body = resp.json()
    assert set(body) == {"id", "status", "filename", "collection_name", "document_id", "upload"}
    assert body["status"] == "processing" and body["document_id"] is None
    upload = body["upload"]
    posted = httpx.post(upload["url"], data=upload["fields"], files={"file": ("testPDF.pdf", pdf)})
    assert posted.status_code in (200, 204), posted.text

    # THEN the S3 event drives parse -> chunk -> embed to done
    doc = wait_done(api, body["id"])
    assert doc["status"] == "done", doc
    assert doc["chunk_count"] > 0 and doc["document_id"] == body["id"]
    assert doc["filetype"] == "application/pdf"

    # AND the stored object is SSE-KMS under the configured key, at rag/<collection>/<uuid>_<name>
    s3 = boto3.client("s3", endpoint_url=runtime.moto_url, region_name="us-east-1")
    assert upload["fields"]["key"] == f"incoming/{body['id']}/testPDF.pdf"  # moved to its key on arrival
    key = doc["storage_path"]
    assert key.startswith(f"rag/{kb['collection_name']}/") and key.endswith("_testPDF.pdf")
    head = s3.head_object(Bucket=runtime.bucket, Key=key)
    assert head["ServerSideEncryption"] == "aws:kms"
    assert head["SSEKMSKeyId"] == runtime.key_arn

    # AND a known sentence of the PDF is among the top results, with its page
    results = search(api, kb["collection_name"], "Apache Tika toolkit for detecting and extracting metadata")
    assert any("Apache Tika is a toolkit for detecting and extracting" in r["content"] for r in results)
    top = results[0]
    assert top["filename"] == "testPDF.pdf" and top["page_start"] == 1
    assert 0 < top["vec_score"] <= 1 and top["chunk_index"] >= 0


def test_direct_multipart_docx_and_markdown(runtime, client_for):
    api = client_for("bob")
    kb = new_base(api)
    docx = docx_bytes(["Hundreds injured in Yemen protest", "Security forces fired on the crowd in the capital."])
    md = (b"# Rotation policy\n\nThe on-call engineer rotates the signing keys every ninety days "
          b"and records the rotation in the audit ledger.\n")
    ids = []
    for name, data in (("NullHeader.docx", docx), ("policy.md", md)):
        resp = api.post(f"/kb/{kb['id']}/documents", files={"file": (name, data)})
        assert resp.status_code == 202, resp.text
        assert resp.json()["document_id"] is None and resp.json()["filename"] == name
        ids.append(resp.json()["id"])
    for doc_id in ids:
        assert wait_done(api, doc_id)["status"] == "done"

    hits = search(api, kb["collection_name"], "Hundreds injured in Yemen protest")
    assert hits and hits[0]["filename"] == "NullHeader.docx"
    assert "Hundreds injured in Yemen protest" in hits[0]["content"]
    hits = search(api, kb["collection_name"], "how often are signing keys rotated?")
    assert hits[0]["filename"] == "policy.md" and "ninety days" in hits[0]["content"]

    s3 = boto3.client("s3", endpoint_url=runtime.moto_url, region_name="us-east-1")
    listed = s3.list_objects_v2(Bucket=runtime.bucket, Prefix=f"rag/{kb['collection_name']}/")["Contents"]
    for obj in listed:
        head = s3.head_object(Bucket=runtime.bucket, Key=obj["Key"])
        assert head["ServerSideEncryption"] == "aws:kms" and head["SSEKMSKeyId"] == runtime.key_arn


def test_health_needs_no_token_and_everything_else_does(runtime):
    assert httpx.get(f"{runtime.api_url}/health").json() == {"status": "ok"}
    resp = httpx.get(f"{runtime.api_url}/kb")
    assert resp.status_code == 401 and resp.json()["error"]["code"] == "UNAUTHORIZED"
    resp = httpx.get(f"{runtime.api_url}/kb", headers={"Authorization": "Bearer not-a-token"})
    assert resp.status_code == 401


def test_another_user_cannot_see_a_personal_base(runtime, client_for):
    owner, stranger = client_for("carol"), client_for("mallory")
    kb = new_base(owner)
    absent = stranger.get(f"/kb/{uuid.uuid4()}")
    refused = stranger.get(f"/kb/{kb['id']}")
    assert refused.status_code == absent.status_code == 404
    assert refused.content == absent.content
    assert refused.json()["error"] == {"code": "NOT_FOUND", "message": "Collection not found", "details": {}}
    resp = stranger.post("/rag/search", json={"query": "x", "collections": [kb["collection_name"]]})
    assert resp.status_code == 404 and resp.content == absent.content
    resp = stranger.post(f"/kb/{kb['id']}/documents", files={"file": ("a.txt", b"hello there")})
    assert resp.status_code == 404


def test_bad_input_is_answered_not_crashed(runtime, client_for):
    api = client_for("dave")
    kb = new_base(api)
    resp = api.get("/no/such/route")
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "NOT_FOUND"
    resp = api.post("/kb", content=b"{not json", headers={"content-type": "application/json"})
    assert resp.status_code == 400 and "body" in resp.json()["error"]["details"]["fields"]
    resp = api.post("/kb", json={"name": ""})
    assert resp.status_code == 422 and "name" in resp.json()["error"]["details"]["fields"]
    resp = api.post("/kb", json={"name": "x", "collection_name": "Bad-Name"})
    assert resp.status_code == 400 and "collection_name" in resp.json()["error"]["details"]["fields"]
    resp = api.post(f"/kb/{kb['id']}/documents", files={"file": ("tool.exe", b"MZ\x90\x00" + b"\x00" * 64)})
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "UNSUPPORTED_TYPE"
    resp = api.post(f"/kb/{kb['id']}/uploads", json={"filename": "big.pdf", "size": 51 * 1024 * 1024})
    assert resp.status_code == 413 and resp.json()["error"]["code"] == "FILE_TOO_LARGE"
    resp = api.post(f"/kb/{kb['id']}/documents", files={"file": ("big.txt", b"a" * (4 * 1024 * 1024 + 100_000))})
    assert resp.status_code == 413 and resp.json()["error"]["code"] == "FILE_TOO_LARGE"
    assert "/uploads" in resp.json()["error"]["message"]
    resp = api.post(f"/kb/{kb['id']}/documents", content=b"plain", headers={"content-type": "text/plain"})
    assert resp.status_code == 400 and "body" in resp.json()["error"]["details"]["fields"]
    resp = api.post(f"/kb/{kb['id']}/documents", data={"organizational_unit": "legal"}, files={"x": ("a", b"")})
    assert resp.status_code == 422 and "file" in resp.json()["error"]["details"]["fields"]
