"""A web site on loopback for the web connector's tests and bench: pages in memory, ETag and
Last-Modified validators (optional), redirects, and a log of every request the server received."""

from __future__ import annotations

import gzip
import hashlib
import threading
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback import serve, stop


@dataclass
class Hit:
    method: str
    path: str
    headers: dict[str, str]
    status: int


@dataclass
class Resource:
    body: bytes = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    modified: float = 1_700_000_000.0


class Site:
    """``site.pages[path] = Resource(...)`` (or ``site.page(path, html)``); ``site.url(path)``; ``site.log``."""

    def __init__(self, validators: bool = True) -> None:
        self.pages: dict[str, Resource] = {}
        self.validators = validators
        self.log: list[Hit] = []
        self._lock = threading.Lock()
        self.server = serve(lambda h, _: self._answer(h), protocol="HTTP/1.1")
        self.port = self.server.server_address[1]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def page(self, path: str, html: str | bytes, **kwargs: Any) -> None:
        self.pages[path] = Resource(html.encode() if isinstance(html, str) else html, **kwargs)

    def paths(self, since: int = 0, method: str | None = None) -> list[str]:
        return [h.path for h in self.log[since:] if method is None or h.method == method]

    def close(self) -> None:
        stop(self.server)

    def _answer(self, req: BaseHTTPRequestHandler) -> None:
        path = req.path
        res = self.pages.get(path)
        status = 404 if res is None else res.status
        headers: dict[str, str] = {}
        body = b"" if res is None else res.body
        if res is not None:
            headers.update(res.headers)
            if res.status == 200:
                headers["Content-Type"] = res.content_type
                if self.validators:
                    etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                    modified = formatdate(res.modified, usegmt=True)
                    headers["ETag"] = etag
                    headers["Last-Modified"] = modified
                    if req.headers.get("If-None-Match") == etag or (
                            "If-None-Match" not in req.headers and req.headers.get("If-Modified-Since") == modified):
                        status, body = 304, b""
        with self._lock:
            self.log.append(Hit("GET", path, dict(req.headers.items()), status))
        req.send_response(status)
        for k, v in headers.items():
            req.send_header(k, v)
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        req.wfile.write(body)


def html(title: str, body: str, *, links: list[str] = (), extra_head: str = "") -> str:  # type: ignore[assignment]
    nav = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return (f"<!doctype html><html><head><title>{title}</title>{extra_head}</head><body>"
            f"<nav>{nav}</nav><main><h1>{title}</h1>{body}</main><footer>Site footer words</footer></body></html>")


def sitemap(urls: list[tuple[str, str | None]]) -> bytes:
    rows = "".join(f"<url><loc>{u}</loc>{f'<lastmod>{m}</lastmod>' if m else ''}</url>" for u, m in urls)
    return (f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{rows}</urlset>").encode()


def sitemap_index(urls: list[tuple[str, str | None]], *, gz: bool = False) -> bytes:
    rows = "".join(f"<sitemap><loc>{u}</loc>{f'<lastmod>{m}</lastmod>' if m else ''}</sitemap>" for u, m in urls)
    data = (f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{rows}</sitemapindex>").encode()
    return gzip.compress(data) if gz else data
