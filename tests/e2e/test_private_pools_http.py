"""Private pools and the kill switch over HTTP (R-ACC-5, R-ERR-1): the status, the code and the
Retry-After header a client sees. The concurrency of the limits is tested at the domain level in
tests/integration/access/test_private_pools.py."""

from __future__ import annotations

import uuid

import boto3
import httpx
import pytest

from sluice.config import reset_settings
from tests.e2e.test_upload_to_search import wait_done

pytestmark = pytest.mark.e2e


@pytest.fixture
def limits(monkeypatch):
    """Change settings of the in-process runtime for one test."""

    def apply(**values: str) -> None:
        for k, v in values.items():
            monkeypatch.setenv(k, v)
        reset_settings()

    yield apply
    monkeypatch.undo()
    reset_settings()


def personal_base(api: httpx.Client) -> dict:
    resp = api.post("/kb", json={"name": "Pool"})
    assert resp.status_code == 201, resp.text
    return resp.json()


def presign(api: httpx.Client, kb: dict) -> httpx.Response:
    return api.post(f"/kb/{kb['id']}/uploads", json={"filename": "n.txt", "size": 10})


def test_the_minute_limit_answers_429_with_retry_after_and_listing_is_not_limited(runtime, client_for, limits):
    limits(UPLOAD_RATE_PER_MINUTE="2")
    api = client_for(f"rita_{uuid.uuid4().hex[:6]}")
    kb = personal_base(api)
    assert [presign(api, kb).status_code for _ in range(2)] == [202, 202]
    refused = presign(api, kb)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    refused = api.post(f"/kb/{kb['id']}/documents", files={"file": ("n.txt", b"some words")})
    assert refused.status_code == 429 and "Retry-After" in refused.headers
    for _ in range(3):
        assert api.get(f"/kb/{kb['id']}/documents").status_code == 200
        assert api.get(f"/kb/{kb['id']}").status_code == 200


def test_the_cap_answers_409_doc_cap_reached(runtime, client_for, limits):
    limits(PRIVATE_DOC_CAP="2", UPLOAD_RATE_PER_MINUTE="100")
    api = client_for(f"cap_{uuid.uuid4().hex[:6]}")
    kb = personal_base(api)
    assert [presign(api, kb).status_code for _ in range(2)] == [202, 202]
    refused = presign(api, kb)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "DOC_CAP_REACHED"
    # The pool says its cap and how much of it is taken, as the refusal counted it (the console shows it).
    assert api.get("/pools/documents").json()["limits"] == {
        "cap": 2, "held": 2, "upload_rate_per_minute": 100, "upload_rate_per_day": 50, "max_recipients": 50}


def test_the_kill_switch_parameter_stops_uploads_while_search_keeps_working(runtime, client_for, limits):
    # GIVEN an indexed document
    api = client_for(f"kim_{uuid.uuid4().hex[:6]}")
    kb = personal_base(api)
    text = b"The lighthouse keeper logs every passing ship in a leather ledger."
    up = api.post(f"/kb/{kb['id']}/documents", files={"file": ("ledger.txt", text)})
    assert up.status_code == 202, up.text
    assert wait_done(api, up.json()["id"])["status"] == "done"

    # WHEN the operator flips the SSM parameter the template names
    limits(INDEXING_PAUSED_CACHE_SECONDS="0")
    name = runtime.resolve(runtime.template.functions["UploadsFunction"].environment["INDEXING_PAUSED_PARAMETER"])
    ssm = boto3.client("ssm", endpoint_url=runtime.moto_url, region_name="us-east-1")
    ssm.put_parameter(Name=name, Value="true", Type="String", Overwrite=True)
    try:
        # THEN both upload routes answer 503 INDEXING_PAUSED
        for resp in (presign(api, kb), api.post(f"/kb/{kb['id']}/documents", files={"file": ("b.txt", b"words")})):
            assert resp.status_code == 503 and resp.json()["error"]["code"] == "INDEXING_PAUSED"
        # AND search over what is indexed keeps working
        found = api.post("/rag/search", json={"query": "who logs the passing ships?",
                                              "collections": [kb["collection_name"]]})
        assert found.status_code == 200 and found.json()["results"]
    finally:
        ssm.put_parameter(Name=name, Value="false", Type="String", Overwrite=True)
    assert presign(api, kb).status_code == 202


def test_the_deployment_default_embedding_is_what_a_plain_base_gets_and_the_catalog_says(runtime, client_for, limits):
    api = client_for(f"dora_{uuid.uuid4().hex[:6]}")
    catalog = api.get("/rag/embedding-models").json()
    assert catalog["default"] == {"provider": "local", "model": "all-MiniLM-L6-v2"}
    assert [m["model"] for m in catalog["models"] if m["is_default"]] == ["all-MiniLM-L6-v2"]
    # the bundled model's measured cosine gate; a model the catalog measured none for says null (0.30)
    assert [m["vec_gate"] for m in catalog["models"] if m["is_default"]] == [0.15]
    assert any(m["vec_gate"] is None for m in catalog["models"])
    limits(DEFAULT_EMBEDDING_PROVIDER="bedrock", DEFAULT_EMBEDDING_MODEL="amazon.titan-embed-text-v2:0")
    assert api.get("/rag/embedding-models").json()["default"] == {
        "provider": "bedrock", "model": "amazon.titan-embed-text-v2:0"}
    kb = personal_base(api)
    assert (kb["embedding_provider"], kb["embedding_model"], kb["embedding_dim"]) == (
        "bedrock", "amazon.titan-embed-text-v2:0", 1024)
    limits(DEFAULT_EMBEDDING_MODEL="no-such-model")
    resp = api.post("/kb", json={"name": "Broken default"})
    assert resp.status_code == 400 and "embedding_model" in resp.json()["error"]["details"]["fields"]
