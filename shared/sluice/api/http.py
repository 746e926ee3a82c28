"""The API Gateway HTTP API (payload 2.0) edge: one resolver factory, one error mapping.

Every error leaves as ``{"error": {"code", "message", "details"}}`` (R-ERR-1); an
unexpected exception is logged with its traceback and answered with a 500 that
names nothing internal.
"""

from __future__ import annotations

import base64
import json
from typing import Any, TypeVar
from urllib.parse import unquote

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


# Deeper than any body a route takes (a search's filters are three levels): a body nested further
# is refused before it is walked, and json's own recursion limit is never what answers.
MAX_JSON_DEPTH = 32
NUL_SENTENCE = "Must not contain a NUL character."


def _refuse_nul_in_request(app: APIGatewayHttpResolver, next_middleware: Any) -> Response:
    """Path parameters and query values with a NUL are 400: PostgreSQL text cannot hold one.

    A path parameter is checked decoded too: a route that takes an opaque id (a user id such
    as auth0|123) decodes it.
    """
    event = app.current_event
    for values in (event.path_parameters or {}, event.query_string_parameters or {}):
        for name, value in values.items():
            if "\x00" in str(value) or "\x00" in unquote(str(value)):
                raise ValidationError(f"{name} contains a NUL character", fields={name: NUL_SENTENCE})
    return next_middleware(app)


def build_resolver() -> APIGatewayHttpResolver:
    app = APIGatewayHttpResolver()
    app.use(middlewares=[_refuse_nul_in_request])

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
    except RecursionError:
        raise _too_deep() from None
    except ValueError:
        raise ValidationError("The request body is not valid JSON", fields={"body": "Not valid JSON."}) from None
    if not isinstance(data, dict):
        raise ValidationError("The request body must be a JSON object", fields={"body": "Expected an object."})
    check_json_values(data)
    return validate(model, data)


def _too_deep() -> ValidationError:
    return ValidationError(f"The request body nests values more than {MAX_JSON_DEPTH} levels deep",
                           fields={"body": f"Nested more than {MAX_JSON_DEPTH} levels deep."})


def check_json_values(data: Any) -> None:
    """Refuse a body nested too deep, or holding a NUL in any key or string (400 naming the field).

    Iterative, so a hostile depth costs a loop, not the stack.
    """
    pending: list[tuple[Any, str, int]] = [(data, "", 0)]
    while pending:
        value, path, depth = pending.pop()
        if depth > MAX_JSON_DEPTH:
            raise _too_deep()
        if isinstance(value, str):
            if "\x00" in value:
                raise ValidationError(f"{path or 'body'} contains a NUL character",
                                      fields={path or "body": NUL_SENTENCE})
        elif isinstance(value, dict):
            for key, item in value.items():
                pending.append((key, path or "body", depth + 1))
                pending.append((item, f"{path}.{key}" if path else str(key), depth + 1))
        elif isinstance(value, list):
            pending.extend((item, f"{path}.{i}", depth + 1) for i, item in enumerate(value))


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
