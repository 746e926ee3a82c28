"""The committed OpenAPI document is the one the routes generate, and it says what they do."""

from __future__ import annotations

import json

from sluice.api.openapi import render
from sluice.cli import api_document
from sluice.local.template import parse
from tests.conftest import ROOT

COMMITTED = ROOT / "infra" / "openapi.json"


def test_the_committed_document_matches_the_routes():
    assert COMMITTED.read_text(encoding="utf-8") == render(api_document(ROOT)), (
        "infra/openapi.json is stale: run `.venv/bin/sluice openapi` and commit it")


def test_every_template_route_is_documented_once_with_the_r_err_1_error_body():
    document = json.loads(COMMITTED.read_text(encoding="utf-8"))
    documented = {(method.upper(), path) for path, ops in document["paths"].items() for method in ops}
    routes = {(r.method, r.path) for r in parse(ROOT / "template.yaml").routes()}
    # The document does not describe itself, nor the console's page and files (HTML and assets, not API).
    assert documented == routes - {("GET", "/openapi.json"), ("GET", "/console"), ("GET", "/console/assets/{proxy+}")}
    for path, ops in document["paths"].items():
        for method, op in ops.items():
            assert op["responses"]["400"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorBody"}, (method, path)
            assert ("security" in op and op["security"] == []) == (path == "/health"), (method, path)
    error = document["components"]["schemas"]["ErrorBody"]
    assert error["required"] == ["error"]
    assert set(document["components"]["schemas"]["ErrorDetail"]["required"]) == {"code", "message", "details"}


def test_a_no_content_answer_is_documented_without_a_body():
    # Found by Schemathesis (issue 17): the 204 of DELETE /kb/{kb_id}/grants/{user_id} was documented
    # as application/json null, while the answer has no body and no content type.
    document = json.loads(COMMITTED.read_text(encoding="utf-8"))
    no_content = [(method, path, op["responses"]["204"]) for path, ops in document["paths"].items()
                  for method, op in ops.items() if "204" in op["responses"]]
    assert no_content, "no route answers 204"
    assert [(m, p) for m, p, answer in no_content if "content" in answer] == []
