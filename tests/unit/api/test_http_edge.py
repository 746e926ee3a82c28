"""The HTTP edge without a network: a resolver's answers to hostile and invalid requests, and the
error body every refusal takes (R-ERR-1)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from pydantic import BaseModel, ConfigDict, Field

from sluice.api.http import build_resolver, check_json_values, request_refusal
from sluice.errors import ConflictError, ValidationError


class Thing(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    tags: list[str] = []


class ThingOut(BaseModel):
    name: str


app = build_resolver()


@app.post("/things")
def create(body: Annotated[Thing, Body()]) -> ThingOut:
    if body.name == "taken":
        raise ConflictError("This name is already taken.", fields={"name": "Taken."})
    if body.name == "crash":
        raise RuntimeError("host db.internal refused password=hunter2")
    return ThingOut(name=body.name)


@app.get("/things/<thing_id>")
def read(thing_id: str, limit: Annotated[int, Query(ge=1, le=5)] = 2) -> ThingOut:
    return ThingOut(name=f"{thing_id}:{limit}")


def call(method: str, path: str, body: str | None = None, query: dict[str, str] | None = None,
         params: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    event: dict[str, Any] = {
        "version": "2.0", "routeKey": f"{method} {path}", "rawPath": path, "rawQueryString": "",
        "headers": {"content-type": "application/json"}, "isBase64Encoded": False,
        "requestContext": {"http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "1.1.1.1",
                                    "userAgent": ""}, "stage": "$default", "requestId": "r", "routeKey": "x"},
    }
    if body is not None:
        event["body"] = body
    if query:
        event["queryStringParameters"] = query
    if params:
        event["pathParameters"] = params
    result = app.resolve(event, {})
    return int(result["statusCode"]), json.loads(result["body"])


def error(body: dict[str, Any]) -> dict[str, Any]:
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return body["error"]


def test_a_valid_request_is_answered_by_its_model():
    assert call("POST", "/things", json.dumps({"name": "lamp"})) == (200, {"name": "lamp"})


@pytest.mark.parametrize("body, status, field", [
    ("{not json", 400, "body"),
    (json.dumps({"name": ""}), 422, "name"),
    (json.dumps({"name": "x", "colour": "red"}), 422, "colour"),
    (json.dumps({"tags": ["a"]}), 422, "name"),
    (json.dumps({"name": "x", "tags": [1, {"a": 1}]}), 422, "tags.1"),
])
def test_an_invalid_body_names_its_field(body, status, field):
    code, answer = call("POST", "/things", body)
    assert code == status
    detail = error(answer)
    assert detail["code"] == "VALIDATION_ERROR" and field in detail["details"]["fields"], detail
    assert all(sentence.endswith(".") for sentence in detail["details"]["fields"].values())


def test_a_query_value_out_of_range_is_a_400_naming_it():
    code, answer = call("GET", "/things/x", query={"limit": "9"}, params={"thing_id": "x"})
    assert code == 400 and "limit" in error(answer)["details"]["fields"]


def test_a_query_parameter_the_route_does_not_take_is_a_400_naming_it():
    assert call("GET", "/things/x", query={"limit": "3"}, params={"thing_id": "x"}) == (200, {"name": "x:3"})
    code, answer = call("GET", "/things/x", query={"limit": "3", "stauts": "error", "page": "2"},
                        params={"thing_id": "x"})
    assert code == 400
    detail = error(answer)
    assert detail["code"] == "VALIDATION_ERROR"
    assert detail["details"]["fields"] == {"page": "Not a query parameter this route takes.",
                                           "stauts": "Not a query parameter this route takes."}
    code, answer = call("POST", "/things", json.dumps({"name": "lamp"}), query={"x": "1"})
    assert code == 400 and list(error(answer)["details"]["fields"]) == ["x"]


@pytest.mark.parametrize("body, field", [
    (json.dumps({"name": "a\u0000b"}), "name"),
    (json.dumps({"name": "x", "tags": ["ok", "bad\u0000"]}), "tags.1"),
    (json.dumps({"name": "x", "k\u0000": 1}), "body"),
    ("[" * 5000 + "]" * 5000, "body"),
    ('{"name": ' + "[" * 40 + "]" * 40 + "}", "body"),
])
def test_a_nul_or_json_nested_too_deep_is_refused_before_the_route_parses_it(body, field):
    code, answer = call("POST", "/things", body)
    assert code == 400 and field in error(answer)["details"]["fields"]


def test_a_nul_in_a_path_parameter_is_refused_decoded_too():
    for value in ("a\u0000", "a%00"):
        code, answer = call("GET", f"/things/{value}", params={"thing_id": value})
        assert code == 400 and error(answer)["details"]["fields"] == {"thing_id": "Must not contain a NUL character."}


def test_a_sluice_error_keeps_its_status_and_fields():
    code, answer = call("POST", "/things", json.dumps({"name": "taken"}))
    assert code == 409 and error(answer) == {"code": "CONFLICT", "message": "This name is already taken.",
                                             "details": {"fields": {"name": "Taken."}}}


def test_an_unexpected_error_is_a_500_that_names_nothing_internal():
    code, answer = call("POST", "/things", json.dumps({"name": "crash"}))
    assert code == 500
    text = json.dumps(answer)
    assert error(answer)["code"] == "INTERNAL_ERROR"
    assert "db.internal" not in text and "hunter2" not in text and "Traceback" not in text


def test_an_unknown_route_is_a_404_in_the_same_shape():
    code, answer = call("GET", "/nothing")
    assert code == 404 and error(answer)["code"] == "NOT_FOUND"


def test_the_refusal_of_a_malformed_multipart_body_is_a_400():
    refusal = request_refusal([{"type": "multipart_invalid", "loc": ("body",), "msg": "x"}])
    assert type(refusal) is ValidationError and refusal.status == 400
    assert refusal.details["fields"] == {"body": "Not a valid multipart body."}


def test_check_json_values_walks_iteratively():
    check_json_values({"a": [{"b": "fine"}] * 1000})
    deep: Any = "x"
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(ValidationError):
        check_json_values(deep)
