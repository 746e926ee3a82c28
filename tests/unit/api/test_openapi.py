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
    assert documented == routes - {("GET", "/openapi.json")}  # the document does not describe itself
    for path, ops in document["paths"].items():
        for method, op in ops.items():
            assert op["responses"]["400"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorBody"}, (method, path)
            assert ("security" in op and op["security"] == []) == (path == "/health"), (method, path)
    error = document["components"]["schemas"]["ErrorBody"]
    assert error["required"] == ["error"]
    assert set(document["components"]["schemas"]["ErrorDetail"]["required"]) == {"code", "message", "details"}
