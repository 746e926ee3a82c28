"""The API Gateway HTTP API (payload 2.0) edge: one resolver factory, one error mapping.

Every error leaves as ``{"error": {"code", "message", "details"}}`` (R-ERR-1); an
unexpected exception is logged with its traceback and answered with a 500 that
names nothing internal.
"""

from __future__ import annotations

import base64
import json
from typing import Any, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from sluice.errors import NotFoundError, SluiceError, ValidationError
from sluice.identity import Principal, principal_from_event
from sluice.observability import logger

M = TypeVar("M", bound=BaseModel)


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(status_code=status, content_type="application/json",
                    body=json.dumps(body, default=str), headers=headers or {})


def error_response(exc: SluiceError) -> Response:
    return json_response(exc.status, exc.body(), exc.headers)


def build_resolver() -> APIGatewayHttpResolver:
    app = APIGatewayHttpResolver()

    @app.exception_handler(SluiceError)
    def _sluice_error(exc: SluiceError) -> Response:
        return error_response(exc)

    @app.not_found
    def _not_found(exc: Exception) -> Response:
        return error_response(NotFoundError("No such route"))

    @app.exception_handler(Exception)
    def _unexpected(exc: Exception) -> Response:
        logger.exception("unhandled error")
        err = SluiceError("Something went wrong on our side; try again. The service log has the details.")
        return error_response(err)

    return app


def principal(app: APIGatewayHttpResolver) -> Principal:
    return principal_from_event(app.current_event.raw_event)


def fields_from(exc: PydanticValidationError, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"])
        key = f"{prefix}{path}" if path else (prefix.rstrip(".") or "body")
        out.setdefault(key, err["msg"])
    return out


def raw_body(app: APIGatewayHttpResolver) -> bytes:
    event = app.current_event.raw_event
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return base64.b64decode(body)
    return body.encode() if isinstance(body, str) else body


def parse_json(app: APIGatewayHttpResolver, model: type[M]) -> M:
    raw = raw_body(app)
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        raise ValidationError("The request body is not valid JSON", fields={"body": "Not valid JSON."}) from None
    if not isinstance(data, dict):
        raise ValidationError("The request body must be a JSON object", fields={"body": "Expected an object."})
    return validate(model, data)


def validate(model: type[M], data: dict[str, Any], prefix: str = "") -> M:
    try:
        return model.model_validate(data)
    except PydanticValidationError as exc:
        from sluice.errors import UnprocessableError

        raise UnprocessableError("The request has invalid fields", fields=fields_from(exc, prefix)) from None


def query_int(app: APIGatewayHttpResolver, name: str, default: int, *, lo: int, hi: int) -> int:
    raw = app.current_event.get_query_string_value(name, None)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"{name} must be an integer", fields={name: "Must be an integer."}) from None
    if not lo <= value <= hi:
        raise ValidationError(f"{name} must be between {lo} and {hi}", fields={name: f"Between {lo} and {hi}."})
    return value
