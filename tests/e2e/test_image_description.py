"""Image description (R-PARSE-6) through the local runtime: a collection's vision model (a fake
OpenAI-compatible server on loopback) describes a PDF's images once each, every page showing one
gets ``[Image: <description>]`` in its chunks, and search finds a page by its picture."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import boto3
import httpx
import psycopg
import pytest

from sluice.vectors.names import table_name
from tests.e2e.test_upload_to_search import search, wait_done
from tests.fakes import FakeChatServer, serving
from tests.unit.parsing.parsing_samples import CHART_SIZE, DIAGRAM_SIZE, pdf_with_images

pytestmark = pytest.mark.e2e

CHART = "A red bar chart titled Zanzibarite quarterly revenue, rising from 4 to 9 million."
DIAGRAM = "A blue wiring diagram of the Quillwort cooling loop with two pumps."


@pytest.fixture
def vision(allow_endpoints) -> Iterator[FakeChatServer]:
    allow_endpoints("127.0.0.1")
    with serving(FakeChatServer()) as server:
        server.descriptions = {CHART_SIZE: CHART, DIAGRAM_SIZE: DIAGRAM}
        yield server


def _setting(server: FakeChatServer, **changes: object) -> dict[str, object]:
    return {"enabled": True, "provider": "openai", "model": "gpt-4o-mini", "base_url": server.base_url, **changes}


def _base(api: httpx.Client, image_description: dict[str, object] | None) -> dict:
    config = {"chunk_size": 300} if image_description is None else {
        "chunk_size": 300, "image_description": image_description}
    resp = api.post("/kb", json={"name": f"Reports {uuid.uuid4().hex[:6]}", "ingestion_config": config})
    assert resp.status_code == 201, resp.text
    return resp.json()


def _upload(api: httpx.Client, kb: dict, data: bytes) -> dict:
    resp = api.post(f"/kb/{kb['id']}/documents", files={"file": ("report.pdf", data, "application/pdf")})
    assert resp.status_code == 202, resp.text
    return wait_done(api, resp.json()["id"])


def _chunks(runtime, kb: dict, doc_id: str) -> list[tuple[str, int, int]]:
    with psycopg.connect(runtime.database_url) as conn:
        rows = conn.execute(
            f"SELECT content, page_start, page_end FROM {table_name(kb['collection_name'])} "  # noqa: S608
            "WHERE document_id = %s ORDER BY chunk_index", (doc_id,)).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def test_each_image_described_once_and_every_page_showing_it_carries_it(runtime, client_for, vision):
    api = client_for("ivy")
    kb = _base(api, _setting(vision))
    assert kb["ingestion_config"]["image_description"]["enabled"] is True

    doc = _upload(api, kb, pdf_with_images())

    assert doc["status"] == "done", doc
    # Two distinct images: the chart twice on a page, the diagram on two pages and the chart's
    # byte-identical copy under another xref make no further call.
    assert vision.calls.get("describe") == 2 and len(vision.image_sizes) == 2
    assert sorted(vision.image_sizes) == sorted([CHART_SIZE, DIAGRAM_SIZE])
    assert doc["image_description"] == {"described": 2, "undescribed": 0, "note": None}
    chunks = _chunks(runtime, kb, doc["id"])
    for page, description in ((1, CHART), (2, DIAGRAM), (3, DIAGRAM), (4, CHART)):
        on_page = [content for content, start, end in chunks if start <= page <= end]
        assert any(f"[Image: {description}]" in content for content in on_page), (page, on_page)
    text = api.get(f"/rag/documents/{doc['id']}/content").text
    assert text.count(f"[Image: {CHART}]") == 2 and text.count(f"[Image: {DIAGRAM}]") == 2
    # The description sits where the page shows the image: after the text above it.
    assert text.index("the revenue overview.") < text.index(CHART) < text.index("Page one closes")

    # A word only the description holds finds the page that shows the picture.
    results = search(api, kb["collection_name"], "Quillwort cooling loop pumps")
    assert results and "Quillwort" in results[0]["content"]
    assert results[0]["page_start"] in (2, 3)


def test_off_by_default_no_call_and_no_image_text(runtime, client_for, vision):
    api = client_for("ivy")
    kb = _base(api, None)

    doc = _upload(api, kb, pdf_with_images())

    assert doc["status"] == "done", doc
    assert vision.requests == [] and doc["image_description"] is None
    assert all("[Image:" not in content for content, _, _ in _chunks(runtime, kb, doc["id"]))
    assert "[Image:" not in api.get(f"/rag/documents/{doc['id']}/content").text


def test_a_failing_description_leaves_the_document_done_and_says_so(runtime, client_for, vision):
    api = client_for("ivy")
    vision.fail_sizes = {DIAGRAM_SIZE: 500}
    kb = _base(api, _setting(vision))

    doc = _upload(api, kb, pdf_with_images())

    assert doc["status"] == "done", doc
    assert doc["image_description"]["described"] == 1 and doc["image_description"]["undescribed"] == 1
    assert doc["image_description"]["note"] == (
        "1 of 2 images was not described: the vision model failed: the provider failed or did not answer in time.")
    text = api.get(f"/rag/documents/{doc['id']}/content").text
    assert CHART in text and "[Image:" in text and DIAGRAM not in text


def test_the_vision_models_route_lists_only_vision_models(client_for):
    models = client_for("ivy").get("/rag/vision-models").json()["models"]
    names = {(m["provider"], m["model"]) for m in models}
    assert ("openai", "gpt-4o-mini") in names and ("bedrock", "anthropic.claude-3-haiku-20240307-v1:0") in names
    assert ("openai", "gpt-3.5-turbo") not in names


FIELD = "ingestion_config.image_description"


def _refusal(api: httpx.Client, setting: dict[str, object], *, scope: str = "personal") -> dict[str, str]:
    resp = api.post("/kb", json={"name": "Refused", "scope": scope,
                                 "ingestion_config": {"image_description": setting}})
    assert resp.status_code == 400, resp.text
    return resp.json()["error"]["details"]["fields"]


def test_the_setting_is_refused_with_the_field_named(runtime, client_for, vision):
    api = client_for("ivy", org="acme", perms=["secrets:view", "collections:edit"])
    fields = _refusal(api, _setting(vision, model="gpt-9-imaginary"))
    assert "is not a model" in fields[f"{FIELD}.model"]
    fields = _refusal(api, _setting(vision, model="gpt-3.5-turbo"))
    assert "reads text only" in fields[f"{FIELD}.model"]
    fields = _refusal(api, _setting(vision, base_url="http://169.254.169.254/v1"))
    assert f"{FIELD}.base_url" in fields

    # A key of another organization (one the caller cannot see) is refused like an absent one.
    sm = boto3.client("secretsmanager", endpoint_url=runtime.moto_url, region_name="us-east-1")
    theirs = sm.create_secret(Name=f"vision-{uuid.uuid4().hex[:8]}", SecretString=json.dumps({"api_key": "sk-x"}),
                              Tags=[{"Key": "sluice:provider", "Value": "openai"},
                                    {"Key": "sluice:org_id", "Value": "globex"}])["ARN"]
    fields = _refusal(api, _setting(vision, secret_id=theirs))
    assert fields == {f"{FIELD}.secret_id": "The vault holds no key with this id that you can use."}
    # The caller's own organization's key is accepted for the same setting.
    ours = sm.create_secret(Name=f"vision-{uuid.uuid4().hex[:8]}", SecretString=json.dumps({"api_key": "sk-y"}),
                            Tags=[{"Key": "sluice:provider", "Value": "openai"},
                                  {"Key": "sluice:org_id", "Value": "acme"}])["ARN"]
    resp = api.post("/kb", json={"name": "Accepted", "ingestion_config": {
        "image_description": _setting(vision, secret_id=ours)}})
    assert resp.status_code == 201, resp.text
    # PATCH refuses the same way.
    resp = api.patch(f"/kb/{resp.json()['id']}", json={"ingestion_config": {
        "image_description": _setting(vision, model="amazon.nova-micro-v1:0", provider="bedrock", base_url=None)}})
    assert resp.status_code == 400 and f"{FIELD}.model" in resp.json()["error"]["details"]["fields"]


def test_a_reader_sees_the_model_but_not_the_key_nor_the_endpoint(runtime, client_for, vision):
    """Issue 26, finding 4: an image-description key and endpoint are a writer's business, as the
    embedding key and endpoint are; a reader of the base sees which model describes, no more."""
    org = f"vizorg_{uuid.uuid4().hex[:6]}"
    writer = client_for("wren", org=org, perms=["secrets:view", "collections:view", "collections:edit"])
    reader = client_for("rudy", org=org, perms=["collections:view"])
    sm = boto3.client("secretsmanager", endpoint_url=runtime.moto_url, region_name="us-east-1")
    key = sm.create_secret(Name=f"vision-{uuid.uuid4().hex[:8]}", SecretString=json.dumps({"api_key": "sk-z"}),
                           Tags=[{"Key": "sluice:provider", "Value": "openai"},
                                 {"Key": "sluice:org_id", "Value": org}])["ARN"]
    resp = writer.post("/kb", json={"name": "Described", "scope": "org", "ingestion_config": {
        "chunk_size": 300, "image_description": _setting(vision, secret_id=key)}})
    assert resp.status_code == 201, resp.text
    kb = resp.json()
    whole = {"enabled": True, "provider": "openai", "model": "gpt-4o-mini", "base_url": vision.base_url,
             "secret_id": key}
    assert kb["ingestion_config"]["image_description"] == whole

    shown = reader.get(f"/kb/{kb['id']}")
    assert shown.status_code == 200 and shown.json()["can_write"] is False
    assert shown.json()["ingestion_config"] == {
        "chunking_strategy": "recursive", "chunk_size": 300,
        "image_description": {"enabled": True, "provider": "openai", "model": "gpt-4o-mini"}}
    listed = [b for b in reader.get("/kb").json()["knowledge_bases"] if b["id"] == kb["id"]]
    assert len(listed) == 1
    assert listed[0]["ingestion_config"] == shown.json()["ingestion_config"]
    assert key not in reader.get("/kb").text and vision.base_url not in reader.get("/kb").text

    # The writer still sees (and edits from) the whole choice.
    assert writer.get(f"/kb/{kb['id']}").json()["ingestion_config"]["image_description"] == whole
    listed = [b for b in writer.get("/kb").json()["knowledge_bases"] if b["id"] == kb["id"]]
    assert listed[0]["ingestion_config"]["image_description"] == whole
    patched = writer.patch(f"/kb/{kb['id']}", json={"description": "charts"})
    assert patched.status_code == 200 and patched.json()["ingestion_config"]["image_description"] == whole
