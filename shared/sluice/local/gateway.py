"""The local HTTP API: requests become API Gateway HTTP API (payload 2.0) events for the
handler the template maps the route to; the JWT check stands in for the authorizer."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt

from sluice.local.hosts import host_allowed
from sluice.local.template import ACCOUNT, Route
from sluice.local.tokens import as_authorizer_claims, verify

# API Gateway refuses a body over 10 MB; Lambda refuses an event over 6 MB.
API_MAX_BODY = 10 * 1024 * 1024
LAMBDA_MAX_EVENT = 6 * 1024 * 1024
_TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded")

Invoke = Callable[[str, dict[str, Any]], dict[str, Any]]


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps({"error": {"code": code, "message": message, "details": {}}}).encode()
    return status, {"content-type": "application/json"}, body


# What the HTTP server itself refuses before a route is known (a header line over 64 KB, over 100
# headers, a request line over 64 KB, a malformed request line or method): the same R-ERR-1 body
# as every other answer, in words that repeat nothing of the request.
_PROTOCOL_ERRORS = {
    400: ("BAD_REQUEST", "The request could not be read as HTTP."),
    414: ("URI_TOO_LONG", "The request's address is longer than the API accepts."),
    431: ("HEADERS_TOO_LARGE", "The request's headers are larger than the API accepts."),
    501: ("NOT_IMPLEMENTED", "The API does not answer this method."),
    505: ("HTTP_VERSION_NOT_SUPPORTED", "The API answers HTTP/1.0 and HTTP/1.1 only."),
}


def protocol_error(status: int) -> tuple[int, dict[str, str], bytes]:
    code, message = _PROTOCOL_ERRORS.get(status, ("BAD_REQUEST", "The request could not be read as HTTP."))
    return _error(status, code, message)


def body_refusal(headers: dict[str, str]) -> tuple[int, dict[str, str], bytes] | None:
    """Why a request's body will not be read, decided from its headers alone (API Gateway's limits)."""
    if "transfer-encoding" in headers:
        return _error(411, "LENGTH_REQUIRED", "Send the body with a Content-Length.")
    raw = headers.get("content-length")
    if raw is None:
        return None
    if not raw.strip().isdigit():
        return _error(400, "VALIDATION_ERROR", "Content-Length must be a whole number of bytes.")
    if int(raw) > API_MAX_BODY:
        return _error(413, "FILE_TOO_LARGE", "The request body is larger than the API accepts (10 MB).")
    return None


def build_event(route: Route, method: str, path: str, query: str, headers: dict[str, str], body: bytes,
                params: dict[str, str], claims: dict[str, str] | None, source_ip: str) -> dict[str, Any]:
    ctype = headers.get("content-type", "")
    is_text = any(ctype.startswith(t) for t in _TEXT_TYPES)
    now = time.time()
    route_key = f"{route.method} {route.path}"
    context: dict[str, Any] = {
        "accountId": ACCOUNT, "apiId": "local", "domainName": "127.0.0.1", "domainPrefix": "local",
        "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": source_ip,
                 "userAgent": headers.get("user-agent", "")},
        "requestId": str(uuid.uuid4()), "routeKey": route_key, "stage": "$default",
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)), "timeEpoch": int(now * 1000),
    }
    if claims is not None:
        context["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    qs = {k: ",".join(v) for k, v in parse_qs(query, keep_blank_values=True).items()}
    event: dict[str, Any] = {
        "version": "2.0", "routeKey": route_key, "rawPath": path, "rawQueryString": query,
        "headers": headers, "requestContext": context, "isBase64Encoded": not is_text,
    }
    if qs:
        event["queryStringParameters"] = qs
    if params:
        event["pathParameters"] = params
    if body:
        event["body"] = body.decode("utf-8", "replace") if is_text else base64.b64encode(body).decode()
    return event


class Gateway:
    def __init__(self, routes: list[Route], invoke: Invoke, jwt_secret: str,
                 allowed_hosts: frozenset[str] = frozenset()) -> None:
        if not jwt_secret:
            raise ValueError("the local gateway needs a JWT secret")
        self.routes = [(r, r.pattern()) for r in routes]
        self.invoke = invoke
        self.jwt_secret = jwt_secret
        self.allowed_hosts = allowed_hosts  # names it is reached by besides loopback (sluice/local/hosts.py)

    def handle(self, method: str, target: str, headers: dict[str, str], body: bytes, source_ip: str
               ) -> tuple[int, dict[str, str], bytes]:
        if not host_allowed(headers.get("host", ""), self.allowed_hosts):
            return _error(403, "FORBIDDEN", "The local API answers only requests addressed to it by a loopback "
                                            "name (Host: 127.0.0.1 or localhost).")
        parts = urlsplit(target)
        path = parts.path
        matched = None
        for route, pattern in self.routes:
            m = pattern.match(path)
            if m and route.method == method:
                matched = (route, m.groupdict())
                break
        if matched is None:
            return _error(404, "NOT_FOUND", "No such route")
        route, params = matched
        claims = None
        if route.auth:
            auth = headers.get("authorization", "")
            token = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
            try:
                claims = as_authorizer_claims(verify(self.jwt_secret, token))
            except jwt.InvalidTokenError:
                return _error(401, "UNAUTHORIZED", "A valid bearer token is required")
        event = build_event(route, method, path, parts.query, headers, body, params, claims, source_ip)
        if len(json.dumps(event)) > LAMBDA_MAX_EVENT:
            return _error(413, "FILE_TOO_LARGE",
                          "The request is larger than a function accepts (6 MB); "
                          "use a presigned upload (POST /kb/{kb_id}/uploads).")
        result = self.invoke(route.function, event)
        status = int(result.get("statusCode", 200))
        out_headers = {k.lower(): str(v) for k, v in (result.get("headers") or {}).items()}
        raw = result.get("body") or ""
        payload = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode()
        return status, out_headers, payload

    def serve(self, host: str, port: int) -> ThreadingHTTPServer:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The headers and the body leave in two writes: with Nagle's algorithm the body waited for
            # the client's delayed ACK of the headers, 40 ms on every answer (TCP_NODELAY sends it now).
            disable_nagle_algorithm = True

            def _any(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                refused = body_refusal(headers)
                if refused is not None:
                    # Not read: the connection closes after the answer, with whatever was sent unread.
                    self.close_connection = True
                    status, out_headers, payload = refused
                else:
                    length = int(headers.get("content-length") or 0)
                    body = self.rfile.read(length) if length else b""
                    status, out_headers, payload = gateway.handle(
                        self.command, self.path, headers, body, self.client_address[0]
                    )
                self.send_response(status)
                for k, v in out_headers.items():
                    if k not in ("content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

            def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
                # http.server answers these with an HTML page; the API answers R-ERR-1 everywhere.
                status, out_headers, payload = protocol_error(code)
                self.close_connection = True
                # An unreadable request line leaves the version at HTTP/0.9, which has no status line.
                self.request_version = "HTTP/1.1"
                self.send_response(status)
                for k, v in out_headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(payload)))
                self.send_header("connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        server = _Server((host, port), Handler)
        server.daemon_threads = True
        return server


class _Server(ThreadingHTTPServer):
    # socketserver's listen backlog is 5: a burst of clients connecting at once (a load test, a
    # folder upload with many workers) overflowed it, and connections were dropped or reset.
    request_queue_size = 128
