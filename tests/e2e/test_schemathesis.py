"""The HTTP API against its own OpenAPI document (infra/openapi.json), driven by Schemathesis through
the local gateway with valid tokens (issue 17; R-ERR-1).

For every operation, a bounded number of derandomized examples of each kind: positive (what the
document allows) and negative (what it refuses), half of them aimed at a real base, collection and
document so the handlers behind the 404 are reached too. Every answer must be below 500, carry a
status and a content type the document declares for the operation, conform to the declared body
schema, and, when it is an error, be exactly the R-ERR-1 shape; a negative example must be refused
(4xx). The caller is an editor of its own organization, made for this module alone.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from tests.conftest import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCHEMA = schemathesis.openapi.from_path(ROOT / "infra" / "openapi.json")
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
EXAMPLES = {GenerationMode.POSITIVE: 20, GenerationMode.NEGATIVE: 20}  # per operation
RUN = uuid.uuid4().hex[:6]
CALLER = (f"fuzz-{RUN}", f"fuzzorg-{RUN}", ["collections:view", "collections:edit"])
# What no error body may show (R-ERR-1): SQL, a stack trace, a host, a bucket, a key.
LEAKS = ("traceback", "select ", "insert into", "psycopg", "sqlstate", 'file "', "127.0.0.1", "localhost",
         "s3://", "amazonaws.com", "arn:aws", "akia")


def r_err_1(response: Any) -> list[str]:
    """What is wrong with an error answer's body, against R-ERR-1."""
    try:
        body = json.loads(response.content)
    except ValueError:
        return [f"an error body that is not JSON: {response.content[:200]!r}"]
    problems = []
    error = body.get("error") if isinstance(body, dict) else None
    if set(body) != {"error"} or not isinstance(error, dict) or set(error) != {"code", "message", "details"}:
        return [f"not the R-ERR-1 shape: {body!r:.300}"]
    if not (isinstance(error["code"], str) and error["code"].isupper() and isinstance(error["message"], str)
            and error["message"] and isinstance(error["details"], dict)):
        problems.append(f"code, message or details of the wrong kind: {error!r:.300}")
    fields = error["details"].get("fields")
    if fields is not None and not (isinstance(fields, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in fields.items())):
        problems.append(f"details.fields is not a map of field to sentence: {fields!r:.300}")
    if response.status_code in (400, 422) and error["code"] == "VALIDATION_ERROR" and not fields:
        problems.append("a validation error that names no field")
    # The sentences, not the field names (embedding_secret_id is a field, not a secret).
    text = " ".join([error["message"], *(fields or {}).values()]).lower()
    problems += [f"the error shows {leak!r}: {text[:300]}" for leak in LEAKS if leak in text]
    return problems


@pytest.fixture(scope="module")
def caller(client_for):
    return client_for(*CALLER)


@pytest.fixture(scope="module")
def kb(caller) -> dict[str, str]:
    resp = caller.post("/kb", json={"name": f"Fuzzed {RUN}", "scope": "org"})
    assert resp.status_code == 201, resp.text
    return resp.json()


@pytest.fixture
def targets(caller, kb) -> dict[str, str]:
    """A real base, its collection and a document of its own for each test (DELETE removes it): half of
    the examples name these."""
    doc = caller.post(f"/kb/{kb['id']}/documents", files={"file": ("notes.txt", b"The fuzzed base holds words.")})
    assert doc.status_code == 202, doc.text
    return {"kb_id": kb["id"], "name": kb["collection_name"], "doc_id": doc.json()["id"],
            "user_id": f"someone-{RUN}"}


def strategy(operation, mode: GenerationMode, targets: dict[str, str]):
    names = {p.name for p in operation.path_parameters}
    generated = operation.as_strategy(generation_mode=mode)
    if not names:
        return generated
    real = operation.as_strategy(generation_mode=mode,
                                 path_parameters={n: targets[n] for n in names if n in targets})
    return st.one_of(generated, real)


@pytest.mark.parametrize("mode", list(EXAMPLES), ids=lambda m: m.value)
@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.label)
def test_the_api_keeps_its_document(runtime, make_token, targets, operation, mode):
    inputs = (operation.path_parameters, operation.query, operation.body)
    if mode is GenerationMode.NEGATIVE and not any(len(list(p)) for p in inputs):
        pytest.skip(f"{operation.label} takes no input, so nothing about it can be invalid")
    headers = {"Authorization": f"Bearer {make_token(*CALLER)}"}
    checks = [status_code_conformance, content_type_conformance, response_schema_conformance]
    if mode is GenerationMode.NEGATIVE:
        checks.append(negative_data_rejection)
    tried: list[int] = []

    @settings(max_examples=EXAMPLES[mode], derandomize=True, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))
    @given(case=strategy(operation, mode, targets))
    def exercise(case):
        response = case.call(base_url=runtime.api_url, headers=headers, timeout=60)
        tried.append(response.status_code)
        assert response.status_code < 500, (response.status_code, response.text[:500])
        if response.status_code >= 400:
            assert r_err_1(response) == [], response.request.url
        case.validate_response(response, checks=checks, headers=headers)

    exercise()
    print(f"{operation.label} {mode.value}: {len(tried)} requests, statuses {sorted(set(tried))}")
    assert tried, "no example was sent"
