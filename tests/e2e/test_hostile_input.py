"""Input a legitimate account can send that must be refused as a 400 naming the field, never a 500
(R-ERR-1): NUL characters, which PostgreSQL text cannot hold, and JSON nested past any body a
route takes. Probed: each of these answered 500 before."""

from __future__ import annotations

import json
import uuid

import pytest

pytestmark = pytest.mark.e2e

EDITOR = ("nul-editor", "nul-org", ["collections:view", "collections:edit"])


def assert_field_refused(resp, field: str) -> None:
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and field in error["details"]["fields"], error


@pytest.fixture(scope="module")
def api(client_for):
    return client_for(*EDITOR)


@pytest.fixture(scope="module")
def kb(api):
    resp = api.post("/kb", json={"name": f"Org {uuid.uuid4().hex[:6]}", "scope": "org"})
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_a_nul_in_a_body_field_names_the_field(api, kb):
    assert_field_refused(api.post("/kb", json={"name": "a\u0000b"}), "name")
    search = {"query": "q\u0000", "collections": [kb["collection_name"]]}
    assert_field_refused(api.post("/rag/search", json=search), "query")
    filtered = {"query": "q", "collections": [kb["collection_name"]],
                "filters": {"organizational_unit": ["legal\u0000"]}}
    assert_field_refused(api.post("/rag/search", json=filtered), "filters.organizational_unit.0")
    assert_field_refused(api.post(f"/kb/{kb['id']}/grants", json={"user_id": "x\u0000", "permission": "view"}),
                         "user_id")
    presign = {"filename": "a.txt", "organizational_unit": "\u0000"}
    assert_field_refused(api.post(f"/kb/{kb['id']}/uploads", json=presign), "organizational_unit")


def test_a_nul_in_a_form_field_or_a_path_names_it(api, kb):
    resp = api.post(f"/kb/{kb['id']}/documents", files={"file": ("a.txt", b"words")},
                    data={"organizational_unit": "legal\u0000"})
    assert_field_refused(resp, "organizational_unit")
    assert_field_refused(api.delete(f"/kb/{kb['id']}/grants/someone%00"), "user_id")
    assert_field_refused(api.get("/rag/collections/x%00y/info"), "name")


def test_a_nul_or_a_direction_override_in_a_filename_is_dropped_from_the_name(api, kb):
    boundary = "sluiceboundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"re\u0000port\u202etxt.md\"\r\nContent-Type: text/markdown\r\n\r\n# Notes\n\nwords\r\n"
            f"--{boundary}--\r\n").encode()
    resp = api.post(f"/kb/{kb['id']}/documents", content=body,
                    headers={"content-type": f"multipart/form-data; boundary={boundary}"})
    assert resp.status_code == 202, resp.text
    assert resp.json()["filename"] == "reporttxt.md"


def test_json_nested_past_any_body_is_refused(api):
    body = "[" * 100_000 + "]" * 100_000
    resp = api.post("/kb", content=json.dumps({"name": "x"})[:-1] + ', "ingestion_config": ' + body + "}",
                    headers={"content-type": "application/json"})
    assert_field_refused(resp, "body")
    resp = api.post("/rag/search", content="{" + '"a":{' * 40 + "}" * 41, headers={"content-type": "application/json"})
    assert_field_refused(resp, "body")
