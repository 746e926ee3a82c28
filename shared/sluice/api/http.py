"""The API Gateway HTTP API (payload 2.0) edge: one resolver factory, one error mapping.

Routes declare typed bodies, parameters and responses; Powertools validates
them and generates the OpenAPI document from them (``sluice.api.openapi``).
Every error leaves as ``{"error": {"code", "message", "details"}}`` (R-ERR-1),
field errors named in ``details.fields``; an unexpected exception is logged
with its traceback and answered with a 500 that names nothing internal.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError as RouteNotFound
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from sluice.errors import NotFoundError, SluiceError, UnprocessableError, ValidationError
from sluice.identity import Principal, principal_from_event

log = logging.getLogger("sluice.api")
M = TypeVar("M", bound=BaseModel)

# Deeper than any body a route takes (a search's filters are three levels): a body nested further
# is refused before it is parsed for the route, and json's own recursion limit never answers.
MAX_JSON_DEPTH = 32
NUL_SENTENCE = "Must not contain a NUL character."
UNKNOWN_QUERY_SENTENCE = "Not a query parameter this route takes."
_GENERIC_500 = "Something went wrong on our side; try again. The service log has the details."


class SluiceResolver(APIGatewayHttpResolver):
    """Powertools' HTTP API resolver with validation on, and hostile input refused before it.

    A NUL character (PostgreSQL text cannot hold one) and JSON nested past any
    body are answered 400 here, before Powertools parses the body for the route.
    """

    def __init__(self) -> None:
        super().__init__(enable_validation=True)

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        try:
            refuse_hostile_input(event)
        except SluiceError as exc:
            return {"statusCode": exc.status, "headers": {"Content-Type": "application/json", **exc.headers},
                    "body": json.dumps(exc.body()), "isBase64Encoded": False}
        return super().resolve(event, context)


def respond(status: int, body: BaseModel | None) -> Response[Any]:
    """A body with a status other than 200 (201 created, 202 accepted, 204 with none)."""
    return Response(status_code=status, content_type="application/json" if body is not None else None, body=body)


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response[Any]:
    return Response(status_code=status, content_type="application/json",
                    body=json.dumps(body, default=str), headers=headers or {})


def error_response(exc: SluiceError) -> Response[Any]:
    return json_response(exc.status, exc.body(), exc.headers)


def build_resolver() -> SluiceResolver:
    app = SluiceResolver()

    @app.exception_handler(SluiceError)
    def _sluice_error(exc: SluiceError) -> Response[Any]:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    def _invalid_request(exc: RequestValidationError) -> Response[Any]:
        return error_response(request_refusal(exc.errors()))

    @app.exception_handler(RequestUnsupportedContentType)
    def _wrong_media(exc: RequestUnsupportedContentType) -> Response[Any]:
        return error_response(ValidationError(
            "The request body is not of a type this route takes",
            fields={"body": "Send JSON (application/json), or a file as multipart/form-data where the route "
                            "takes one."}))

    @app.not_found
    def _not_found(exc: RouteNotFound) -> Response[Any]:
        return error_response(NotFoundError("No such route"))

    @app.exception_handler(Exception)
    def _unexpected(exc: Exception) -> Response[Any]:
        log.exception("unhandled error")
        return error_response(SluiceError(_GENERIC_500))

    app.use(middlewares=[refuse_unknown_query])
    return app


def refuse_unknown_query(app: Any, next_middleware: Callable[[Any], Response[Any]]) -> Response[Any]:
    """A query parameter the route does not take is refused by its name (400), never ignored: a client
    that misspells ``status`` learns it, instead of reading every document as if filtered."""
    route = app.context.get("_route")
    if route is not None:
        known = {p.alias for p in route.dependant.query_params}
        unknown = sorted(k for k in (app.current_event.query_string_parameters or {}) if k not in known)
        if unknown:
            raise ValidationError("The request is not valid",
                                  fields={name: UNKNOWN_QUERY_SENTENCE for name in unknown})
    return next_middleware(app)


def request_refusal(errors: Sequence[Any]) -> ValidationError:
    """Powertools' validation errors as R-ERR-1: a body that is not JSON, a path or query value
    out of range, a field missing or wrong — each named by its dotted field, with a sentence."""
    fields: dict[str, str] = {}
    malformed = False
    for err in errors:
        loc = [str(part) for part in err.get("loc", ())]
        where, rest = (loc[0], loc[1:]) if loc else ("body", [])
        if err.get("type") in ("json_invalid", "multipart_invalid"):
            malformed = True
            fields["body"] = "Not valid JSON." if err["type"] == "json_invalid" else "Not a valid multipart body."
            continue
        key = ".".join(rest) if rest else where
        fields.setdefault(key, _sentence(err))
        malformed = malformed or where in ("path", "query", "header")
    if malformed:
        return ValidationError("The request is not valid", fields=fields)
    return UnprocessableError("The request has invalid fields", fields=fields)


def _sentence(err: Mapping[str, Any]) -> str:
    message = str(err.get("msg") or "").strip()
    if not message:
        message = {"missing": "Required.", "extra_forbidden": "Not a field this route takes."}.get(
            str(err.get("type")), "Not valid.")
    return message if message.endswith(".") else message + "."


def refuse_hostile_input(event: Mapping[str, Any]) -> None:
    """Refuse a NUL in a path parameter or query value (decoded too), and a JSON body nested too
    deep or holding a NUL; 400 naming the field."""
    for values in (event.get("pathParameters") or {}, event.get("queryStringParameters") or {}):
        for name, value in values.items():
            if "\x00" in str(value) or "\x00" in unquote(str(value)):
                raise ValidationError(f"{name} contains a NUL character", fields={name: NUL_SENTENCE})
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    ctype = headers.get("content-type", "")
    if ctype.startswith("multipart/form-data") and "boundary=" not in ctype:
        raise ValidationError("Send the file as multipart/form-data with its boundary",
                              fields={"body": "Not a valid multipart body."})
    body = event.get("body")
    if not body or event.get("isBase64Encoded") or not (ctype == "" or ctype.startswith("application/json")):
        return
    try:
        data = json.loads(body)
    except RecursionError:
        raise _too_deep() from None
    except ValueError:
        return  # the route's own validation answers it
    check_json_values(data)


def _too_deep() -> ValidationError:
    return ValidationError(f"The request body nests values more than {MAX_JSON_DEPTH} levels deep",
                           fields={"body": f"Nested more than {MAX_JSON_DEPTH} levels deep."})


def check_json_values(data: Any) -> None:
    """Refuse a value nested too deep, or holding a NUL in any key or string (400 naming the field).

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


def principal(app: APIGatewayHttpResolver) -> Principal:
    return principal_from_event(app.current_event.raw_event)


def validate(model: type[M], data: dict[str, Any], prefix: str = "") -> M:
    """``data`` as ``model``; a refusal names each field (``prefix`` + its dotted path), 422."""
    try:
        return model.model_validate(data)
    except PydanticValidationError as exc:
        fields: dict[str, str] = {}
        for err in exc.errors():
            path = ".".join(str(p) for p in err["loc"])
            fields.setdefault(f"{prefix}{path}" if path else (prefix.rstrip(".") or "body"), _sentence(err))
        raise UnprocessableError("The request has invalid fields", fields=fields) from None
