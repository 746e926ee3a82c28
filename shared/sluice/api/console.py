"""The console's page and assets as the deployment serves them (R-UI-1).

The console is built by Vite (console/, `make install`) into the console function's own folder
(functions/console/static/): an ``index.html`` and content-hashed files under ``assets/``. This
module answers for them with strict headers:

- a Content-Security-Policy that lets the page run only scripts and styles of its own origin (no
  inline script, no eval), talk only to its own origin (the API), the token issuer (sign-in), and the
  bucket a presigned upload goes to, and be framed by nobody;
- ``X-Content-Type-Options: nosniff``, no referrer, a document of its own (COOP);
- no caching but of the hashed assets, which never change under their name.

The page learns the deployment's sign-in settings from a ``<meta>`` element written into it here
(attribute-escaped JSON), never from an inline script. Nothing here reads a setting: the handler
hands in what it read.
"""

from __future__ import annotations

import gzip
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aws_lambda_powertools.event_handler import Response

# What Vite writes under assets/: a name, a dash, its content hash, an extension. Nothing else is served.
ASSET_NAME = re.compile(r"^[A-Za-z0-9_.-]+-[A-Za-z0-9_-]{8,}\.(js|css|svg|woff2|png|map)$")
CONTENT_TYPES = {
    "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8", "svg": "image/svg+xml",
    "woff2": "font/woff2", "png": "image/png", "map": "application/json",
}
IMMUTABLE = "public, max-age=31536000, immutable"
NOT_BUILT = ("The console is not built into this deployment: run `make install` (npm ci and the Vite build) "
             "before `sam build`.")
CONFIG_MARK = "<!--sluice-console-config-->"


def origin(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, or None for anything else (``sluice-local``, empty)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"


def content_security_policy(connect: list[str]) -> str:
    """The policy: own origin for everything, ``connect`` origins besides for fetch and XHR."""
    allowed = " ".join(["'self'", *dict.fromkeys(o for o in connect if o)])
    return "; ".join([
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "font-src 'self'",
        f"connect-src {allowed}", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
        "object-src 'none'", "manifest-src 'self'",
    ])


@dataclass(frozen=True)
class PageConfig:
    """What the page is told: how to sign in, and the upload ceiling its drop overlay states."""

    issuer: str
    client_id: str
    max_upload_bytes: int
    direct_upload_max_bytes: int

    def meta(self) -> str:
        value = json.dumps({"issuer": self.issuer, "client_id": self.client_id,
                            "max_upload_bytes": self.max_upload_bytes,
                            "direct_upload_max_bytes": self.direct_upload_max_bytes}, separators=(",", ":"))
        return f'<meta name="sluice-console" content="{html.escape(value, quote=True)}">'


@dataclass
class Console:
    """The built console in ``static`` (may be absent: every answer is then a 503 saying so)."""

    static: Path
    config: PageConfig
    connect: list[str]
    _gzipped: dict[str, bytes] = field(default_factory=dict)

    def _headers(self, content_type: str, cache: str) -> dict[str, str]:
        return {
            "Content-Type": content_type,
            "Content-Security-Policy": content_security_policy(self.connect),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY",
            "Cross-Origin-Opener-Policy": "same-origin",
            "Cache-Control": cache,
        }

    def _answer(self, status: int, body: bytes, content_type: str, cache: str, *, gzip_ok: bool,
                key: str) -> Response[Any]:
        headers = self._headers(content_type, cache)
        if gzip_ok and len(body) > 1024:
            packed = self._gzipped.get(key)
            if packed is None:
                packed = self._gzipped[key] = gzip.compress(body, compresslevel=9, mtime=0)
            body = packed
            headers["Content-Encoding"] = "gzip"
        headers["Vary"] = "Accept-Encoding"
        return Response(status_code=status, headers=headers, body=body)

    def _not_built(self) -> Response[Any]:
        body = json.dumps({"error": {"code": "CONSOLE_NOT_BUILT", "message": NOT_BUILT, "details": {}}})
        return Response(status_code=503, headers=self._headers("application/json", "no-store"), body=body)

    def page(self, *, gzip_ok: bool) -> Response[Any]:
        index = self.static / "index.html"
        if not index.is_file():
            return self._not_built()
        text = index.read_text(encoding="utf-8")
        body = text.replace(CONFIG_MARK, self.config.meta(), 1).encode()
        return self._answer(200, body, "text/html; charset=utf-8", "no-store", gzip_ok=gzip_ok, key="index.html")

    def asset(self, name: str, *, gzip_ok: bool) -> Response[Any]:
        """A file of assets/ by its hashed name; a 404 for any other name (no path, no traversal)."""
        match = ASSET_NAME.match(name)
        path = self.static / "assets" / name
        if match is None or not path.is_file():
            if not (self.static / "index.html").is_file():
                return self._not_built()
            body = json.dumps({"error": {"code": "NOT_FOUND", "message": "No such console file.", "details": {}}})
            return Response(status_code=404, headers=self._headers("application/json", "no-store"), body=body)
        kind = match.group(1)
        compressible = kind in ("js", "css", "svg", "map")
        return self._answer(200, path.read_bytes(), CONTENT_TYPES[kind], IMMUTABLE,
                            gzip_ok=gzip_ok and compressible, key=f"assets/{name}")


def accepts_gzip(headers: dict[str, str] | None) -> bool:
    value = next((v for k, v in (headers or {}).items() if k.lower() == "accept-encoding"), "")
    return any(part.split(";")[0].strip() == "gzip" for part in value.split(","))
