"""A failed presigned upload (R-UP-2) through the local stack: the document's ``has_file`` and
``POST /rag/documents/{id}/retry`` (R-DOC-5) agree for each way it can fail. Where the stored original
exists, retry re-reads it; where it never came or was refused and deleted, ``has_file`` is false, the
download answers 404 and retry's 400 says to upload the file again."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.test_reaper import age
from tests.e2e.test_upload_to_search import new_base, wait_done

pytestmark = pytest.mark.e2e

NOT_A_PDF = b"%PDF-1.7 but nothing of a PDF follows"


def presign(api: httpx.Client, kb: dict, filename: str) -> dict:
    resp = api.post(f"/kb/{kb['id']}/uploads", json={"filename": filename})
    assert resp.status_code == 202, resp.text
    return resp.json()


def post(accepted: dict, data: bytes) -> None:
    upload = accepted["upload"]
    posted = httpx.post(upload["url"], data=upload["fields"], files={"file": (accepted["filename"], data)})
    assert posted.status_code in (200, 204), posted.text


def assert_no_file_to_retry(api: httpx.Client, doc: dict) -> None:
    assert doc["status"] == "error" and doc["has_file"] is False, doc
    assert api.get(f"/rag/documents/{doc['id']}/file").status_code == 404
    refused = api.post(f"/rag/documents/{doc['id']}/retry")
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert "upload it again" in error["message"] and "storage_path" in error["details"]["fields"]
    assert api.get(f"/rag/documents/{doc['id']}").json()["attempt"] == 1


def test_an_upload_that_never_arrived_has_no_file_and_retry_says_upload_it_again(runtime, client_for):
    api = client_for("presign-pia")
    kb = new_base(api)
    accepted = presign(api, kb, "never.pdf")
    age(runtime, accepted["id"])
    runtime.scheduler.fire("ReaperFunction")
    assert_no_file_to_retry(api, api.get(f"/rag/documents/{accepted['id']}").json())


def test_an_upload_that_is_not_what_its_name_says_has_no_file_and_retry_says_upload_it_again(runtime, client_for):
    api = client_for("presign-pia")
    kb = new_base(api)
    accepted = presign(api, kb, "invoice.pdf")
    post(accepted, b"MZ\x90\x00" + b"\x00" * 1020)  # a Windows program, named as a PDF
    doc = wait_done(api, accepted["id"])
    assert "Windows program" in doc["error_message"]
    assert_no_file_to_retry(api, doc)


def test_an_upload_over_the_ceiling_has_no_file_and_retry_says_upload_it_again(runtime, client_for):
    from sluice.wiring import stage_context

    api = client_for("presign-pia")
    kb = new_base(api)
    accepted = presign(api, kb, "big.txt")
    ctx = stage_context()
    settings = ctx.settings
    # moto does not enforce the POST policy's content-length-range; the arrival's own check does
    ctx.settings = settings.model_copy(update={"max_upload_size_mb": 1})
    try:
        post(accepted, b"x" * (1024 * 1024 + 1))
        doc = wait_done(api, accepted["id"])
    finally:
        ctx.settings = settings
    assert "larger than the 1 MB limit" in doc["error_message"]
    assert_no_file_to_retry(api, doc)


def test_an_upload_that_arrived_and_failed_to_parse_keeps_its_file_and_retry_reads_it_again(runtime, client_for):
    api = client_for("presign-pia")
    kb = new_base(api)
    accepted = presign(api, kb, "broken.pdf")
    post(accepted, NOT_A_PDF)
    doc = wait_done(api, accepted["id"])
    assert doc["status"] == "error" and doc["has_file"] is True, doc
    assert httpx.get(api.get(f"/rag/documents/{doc['id']}/file").json()["url"]).content == NOT_A_PDF

    retried = api.post(f"/rag/documents/{doc['id']}/retry")
    assert retried.status_code == 202, retried.text
    assert retried.json()["attempt"] == 2
    again = wait_done(api, doc["id"])
    # the same file read again: the same sentence, not "no stored file"
    assert (again["status"], again["error_message"], again["has_file"]) == ("error", doc["error_message"], True)
