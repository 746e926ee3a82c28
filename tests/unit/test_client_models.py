"""The client's models are the service's OpenAPI document: same schemas, fields, required sets and types."""

from __future__ import annotations

import importlib.util
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

models = pytest.importorskip("sluice_client.models", reason="sluice-client is not installed (make install)")

REPO = Path(__file__).resolve().parents[2]
DOCUMENT = REPO / "infra" / "openapi.json"
GENERATOR = REPO / "clients" / "python" / "tools" / "generate_models.py"
_KEEP = ("type", "anyOf", "$ref", "items", "additionalProperties", "enum", "const", "format")


def _document() -> dict[str, Any]:
    return json.loads(DOCUMENT.read_text(encoding="utf-8"))


def _shape(schema: Any) -> Any:
    """A schema's type alone: titles, descriptions, defaults and constraints left out."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key in _KEEP:
        if key not in schema:
            continue
        value = schema[key]
        if key == "$ref":
            value = value.rsplit("/", 1)[-1]
        elif key == "anyOf":
            value = sorted((_shape(s) for s in value), key=json.dumps)
        elif key in ("items", "additionalProperties"):
            if value in (True, {}):
                continue  # "any value" either way
            value = _shape(value)
        out[key] = value
    return out


def _forms(document: dict[str, Any]) -> list[str]:
    return sorted(n for n in document["components"]["schemas"] if n.startswith("Body_"))


def test_every_schema_but_the_multipart_forms_is_a_model() -> None:
    document = _document()
    schemas = document["components"]["schemas"]
    assert _forms(document) == ["Body_share_document_pools_documents_post",
                                "Body_upload_document_kb__kb_id__documents_post", "Body_upload_file_files_upload_post"]
    expected = sorted(set(schemas) - set(_forms(document)))
    assert sorted(n for n in models.__all__ if n != "SluiceModel") == expected


@pytest.mark.parametrize("name", sorted(n for n in _document()["components"]["schemas"] if not n.startswith("Body_")))
def test_model_fields_required_and_types_are_the_documents(name: str) -> None:
    wanted = _document()["components"]["schemas"][name]
    model = getattr(models, name)
    got = model.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
    assert list(got.get("properties", {})) == list(wanted.get("properties", {}))
    assert sorted(got.get("required", [])) == sorted(wanted.get("required", []))
    for field, schema in wanted.get("properties", {}).items():
        assert _shape(got["properties"][field]) == _shape(schema), f"{name}.{field}"


def test_the_committed_models_are_what_the_generator_writes_from_the_committed_document() -> None:
    spec = importlib.util.spec_from_file_location("sluice_client_generator", GENERATOR)
    assert spec and spec.loader
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    committed = Path(models.__file__).read_text(encoding="utf-8")
    assert generator.render(_document()) == committed, (
        "infra/openapi.json changed: run python clients/python/tools/generate_models.py")


def test_a_search_request_carries_a_field_this_version_does_not_name() -> None:
    body = models.SearchRequest(query="q", collections=["c"], alpha=0.3, min_vec_score=0.2)
    assert body.model_dump(mode="json", exclude_unset=True) == {
        "query": "q", "collections": ["c"], "alpha": 0.3, "min_vec_score": 0.2}


def _placeholders(build) -> dict[str, Any]:
    """Each required argument of an operation builder as the document's {name}, so its path shows them."""
    args: dict[str, Any] = {}
    for param in inspect.signature(build).parameters.values():
        body_fields = ("name", "query", "collections", "connector", "config")  # defaulted, but a body needs them
        if param.kind is param.VAR_KEYWORD or (param.default is not inspect.Parameter.empty
                                               and param.name not in body_fields):
            continue
        args[param.name] = {"content": b"x", "collections": ["c"], "recipients": ["u"], "config": {}}.get(
            param.name, "{" + param.name + "}")
    if build.__name__ == "attach":  # its file_id is a body field, a UUID
        args["file_id"] = "00000000-0000-4000-8000-000000000000"
    return args


def test_the_client_has_a_method_named_by_each_operation_id_sending_to_its_route():
    from urllib.parse import unquote

    from sluice_client import AsyncSluice, Sluice, _ops

    document = _document()
    seen = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            name = operation["operationId"]
            seen.append(name)
            assert callable(getattr(Sluice, name, None)) and callable(getattr(AsyncSluice, name, None)), name
            op = getattr(_ops, name)(**_placeholders(getattr(_ops, name)))
            assert (op.method, unquote(op.path)) == (method.upper(), path), name
    assert len(seen) == len(set(seen)) == len(_ops.ALL)


def test_every_operation_has_one_tag_of_the_documents_areas():
    document = _document()
    tags = [t["name"] for t in document["tags"]]
    assert tags == ["knowledge bases", "documents", "search", "sync", "teardowns", "chat", "pools", "catalog"]
    used = {op["tags"][0] for ops in document["paths"].values() for op in ops.values() if len(op["tags"]) == 1}
    assert used == set(tags)
