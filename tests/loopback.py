"""A real HTTP server on a loopback port for the tests' doubles of remote services (Drive, Graph,
Confluence, a web site): each request handed to the double's own ``answer(handler, method)``, and one
way to write an answer."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(answer: Callable[[BaseHTTPRequestHandler, str], None], *, methods: Iterable[str] = ("GET",),
          protocol: str = "HTTP/1.0") -> ThreadingHTTPServer:
    """A started server on 127.0.0.1 (port ``server.server_address[1]``) answering ``methods`` through
    ``answer``; :func:`stop` ends it."""
    class Handler(BaseHTTPRequestHandler):
        protocol_version = protocol

        def log_message(self, *args: object) -> None:
            pass

    for method in methods:
        setattr(Handler, f"do_{method}", lambda h, _m=method: answer(h, _m))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def stop(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()


def reply(h: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str,
          headers: dict[str, str] | None = None) -> None:
    """``data`` as the answer, with its length; a client that stopped reading (at its size ceiling) is no error."""
    h.send_response(status)
    h.send_header("Content-Type", content_type)
    h.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        h.wfile.write(data)
