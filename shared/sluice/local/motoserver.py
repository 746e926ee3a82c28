"""The local moto, in server mode, answering the stack's own clients and no web page.

moto checks no credentials, its port is fixed (4566) and the bucket name predictable, so whatever
reaches the port reads every object and secret. SDKs and the CLI send no ``Origin``; a browser
sends one with every cross-origin request that could read an answer or change state, and
``Sec-Fetch-Site`` with the rest. So, before moto sees it, a request is refused (403) when its Host
is not the stack's (sluice/local/hosts.py: DNS rebinding), when it carries an Origin other than
the gateway's, or when the browser says it is cross-site. moto's global CORS, which granted every
origin everything, is off; the one grant is here: the gateway's origin may read and post to the
bucket (a page's presigned POST, a download link), as an S3 CORS rule would let it, and nothing
else (moto applies a bucket's CORS rule to some answers, not to a form POST's).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from sluice.local.hosts import host_allowed

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[Environ, StartResponse], Iterable[bytes]]
Headers = list[tuple[str, str]]

GRANTED_METHODS = ("GET", "HEAD", "POST")


def _refusal(start_response: StartResponse, message: str) -> list[bytes]:
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
            f"<Message>{message}</Message></Error>").encode()
    start_response("403 Forbidden", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
    return [body]


def _grant(origin: str) -> Headers:
    return [("Access-Control-Allow-Origin", origin), ("Access-Control-Expose-Headers", "ETag"), ("Vary", "Origin")]


class BrowserGuard:
    """WSGI middleware in front of moto. What it grants is set once the gateway listens (its port
    is known only then): until then no origin is taken."""

    def __init__(self, app: WsgiApp, names: Iterable[str] = ()) -> None:
        self.app = app
        self.names = frozenset(names)
        self.origins: frozenset[str] = frozenset()
        self.bucket: str | None = None

    def grant(self, origins: frozenset[str], bucket: str) -> None:
        self.origins, self.bucket = origins, bucket

    def _in_bucket(self, path: str) -> bool:
        return self.bucket is not None and (path == f"/{self.bucket}" or path.startswith(f"/{self.bucket}/"))

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        if not host_allowed(str(environ.get("HTTP_HOST", "")), self.names):
            return _refusal(start_response, "The local moto answers only requests addressed to it by a loopback "
                                            "name (Host: 127.0.0.1 or localhost) or an IP address.")
        origin = environ.get("HTTP_ORIGIN")
        if origin is None:
            if environ.get("HTTP_SEC_FETCH_SITE") == "cross-site":
                return _refusal(start_response, "The local moto answers no cross-site request.")
            return self.app(environ, start_response)
        method = str(environ.get("REQUEST_METHOD", ""))
        asked = str(environ.get("HTTP_ACCESS_CONTROL_REQUEST_METHOD", method))
        if origin not in self.origins or not self._in_bucket(str(environ.get("PATH_INFO", ""))) \
                or asked not in GRANTED_METHODS:
            return _refusal(start_response, "The local moto answers no web page but the local gateway's, "
                                            "and that one only to read and post to the bucket.")
        if method == "OPTIONS":  # the preflight, answered here: moto would not know the grant
            headers = [*_grant(origin), ("Access-Control-Allow-Methods", ", ".join(GRANTED_METHODS)),
                       ("Access-Control-Max-Age", "600"), ("Content-Length", "0")]
            requested = environ.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS")
            if requested:
                headers.append(("Access-Control-Allow-Headers", str(requested)))
            start_response("200 OK", headers)
            return [b""]

        def granted(status: str, headers: Headers, exc_info: Any = None) -> Any:
            kept = [(k, v) for k, v in headers if not k.lower().startswith("access-control-") and k.lower() != "vary"]
            return start_response(status, [*kept, *_grant(origin)], exc_info)

        return self.app(environ, granted)


class MotoServer:
    """moto's ThreadedMotoServer, with the guard in front and its global CORS off."""

    def __init__(self, address: str, port: int, names: Iterable[str] = ()) -> None:
        from moto.moto_server import werkzeug_app

        # MOTO_DISABLE_GLOBAL_CORS is read once, when moto.settings is first imported, which may be
        # before the stack starts (a test's fixtures, the workflows' configuration); moto's app
        # factory reads the copy its own module took.
        werkzeug_app.DISABLE_GLOBAL_CORS = True  # type: ignore[attr-defined]
        self.guard = BrowserGuard(werkzeug_app.DomainDispatcherApplication(werkzeug_app.create_backend_app), names)
        self.address, self.port = address, port
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def grant(self, origins: frozenset[str], bucket: str) -> None:
        """Let these web origins read and post to the bucket (sluice/local/runtime.py: the gateway's)."""
        self.guard.grant(origins, bucket)

    def start(self) -> None:
        from moto.moto_server.werkzeug_app import MotoRequestHandler
        from werkzeug.serving import make_server

        self._server = make_server(self.address, self.port, self.guard, threaded=True,
                                   request_handler=MotoRequestHandler)
        # A stop is seen within 0.1 s (werkzeug's default looks every 0.5 s).
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.1,), name="moto", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()  # serve_forever closes the listening socket as it returns
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None
