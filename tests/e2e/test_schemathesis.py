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

import uuid

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
from tests.e2e.error_shape import r_err_1

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCHEMA = schemathesis.openapi.from_path(ROOT / "infra" / "openapi.json")
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
EXAMPLES = {GenerationMode.POSITIVE: 15, GenerationMode.NEGATIVE: 15}  # per operation
RUN = uuid.uuid4().hex[:6]
CALLER = (f"fuzz-{RUN}", f"fuzzorg-{RUN}", ["collections:view", "collections:edit"])
@pytest.fixture(scope="module")
def caller(client_for):
    return client_for(*CALLER)


@pytest.fixture
def kb(caller) -> dict[str, str]:
    # One per test: DELETE /kb/{kb_id} tears the base down (issue 15), so a later test needs its own.
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
