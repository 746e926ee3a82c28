"""The OpenAPI 3.1 document of the whole HTTP API, generated from the routes' own types.

Each function has its own resolver (one Lambda, one resolver); the document
merges them, in the order template.yaml declares the routes, and describes every
error as R-ERR-1's body. ``sluice openapi`` writes it to ``infra/openapi.json``;
the KbFunction serves that committed file at ``GET /openapi.json``, and a test
fails when the file and the code disagree.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from sluice import __version__
from sluice.api import operations
from sluice.api.views import ErrorBody
from sluice.config import AssetSettings, read

OPENAPI_ENV = AssetSettings.model_fields["openapi_path"].alias
FILENAME = "openapi.json"
_REPO_DOCUMENT = Path(__file__).resolve().parents[3] / "infra" / FILENAME
# Inside the Lambda layer the build copies infra/ beside the package (Makefile, build-SluiceLayer).
_PACKAGED_DOCUMENT = Path(__file__).resolve().parents[1] / "_data" / FILENAME

_ERROR_RESPONSES = {
    "400": "The request is not valid: details.fields names each field and why.",
    "401": "No valid bearer token.",
    "404": "Not found, or out of the caller's reach (the same answer).",
    "409": "In conflict with the current state (a name taken, a cap reached, a teardown running).",
    "413": "The body or the file is larger than the route takes.",
    "422": "The body's values are refused: details.fields names each field and why.",
    "429": "Too many requests: Retry-After says when to try again.",
    "500": "Something went wrong on the service's side; nothing internal is named.",
    "503": "Indexing is paused by the operator; search keeps working.",
}


def document_path() -> Path:
    override = read(AssetSettings).openapi_path
    if override:
        return Path(override)
    return _REPO_DOCUMENT if _REPO_DOCUMENT.is_file() else _PACKAGED_DOCUMENT


def committed_document() -> str:
    """The document as committed (and shipped), served as it is."""
    return document_path().read_text(encoding="utf-8")


def build_document(apps: dict[str, Path], open_routes: set[tuple[str, str]]) -> dict[str, Any]:
    """The document for the API functions ``apps`` (name → its app.py, in template order);
    ``open_routes`` are the (method, path) pairs that take no token."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    open_routes = {(method.lower(), path) for method, path in open_routes}
    for name, app_path in apps.items():
        app = _load_app(app_path, name)
        schema = json.loads(app.get_openapi_json_schema(title="Sluice", version=__version__))
        for path, ops in schema.get("paths", {}).items():
            for method, operation in ops.items():
                _describe_errors(operation, (method, path) in open_routes)
                tag, operation_id = operations.name(method, path)
                operation["operationId"], operation["tags"] = operation_id, [tag]
                paths.setdefault(path, {})[method] = operation
        schemas.update(schema.get("components", {}).get("schemas", {}))
    for unused in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(unused, None)
    schemas["ErrorBody"] = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(schemas["ErrorBody"].pop("$defs", {}))
    return {
        "openapi": "3.1.0",
        "info": {"title": "Sluice", "version": __version__,
                 "description": "Serverless document ingestion and retrieval for RAG. Every route but "
                                "/health takes a bearer JWT; every error is {error: {code, message, details}}."},
        "tags": [{"name": tag, "description": text} for tag, text in operations.TAGS.items()],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
        },
        "security": [{"bearer": []}],
    }


def _describe_errors(operation: dict[str, Any], open_route: bool) -> None:
    """Powertools describes a refused request as its own 422 body; Sluice answers R-ERR-1's."""
    responses = operation.setdefault("responses", {})
    responses.pop("422", None)
    if "204" in responses:  # Powertools documents the handler's None as a JSON null; a 204 has no body
        responses["204"].pop("content", None)
    for status, description in _ERROR_RESPONSES.items():
        if open_route and status == "401":
            continue
        responses[status] = {"description": description,
                             "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
    if open_route:
        operation["security"] = []


def _load_app(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"sluice_openapi_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False) + "\n"
