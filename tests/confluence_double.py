"""A test double of the Confluence Cloud REST API v2: a real HTTP server on loopback (a threaded
``http.server``) answering the requests the ``confluence`` connector makes, in the shapes Atlassian
documents. There is no local Confluence to test against, so this is what the connector was tested
with - not the real service.

What it implements, each from the documentation (the pages are quoted in
tests/integration/sync/test_confluence_connector.py, where the double is checked against them):

* ``GET /wiki/api/v2/spaces?keys=<KEY>`` - "Get spaces": ``{"results": [{"id", "key", "name", "type",
  "status", ...}], "_links": {"next"?, "base"}}``.
* ``GET /wiki/api/v2/spaces/{id}/pages`` - "Get pages in space": ``limit`` (default 25, at most 250),
  ``cursor``, ``status``, ``body-format``; the next page's relative URL in the ``Link`` header
  (``</wiki/api/v2/...&cursor=...>; rel="next", <https://site.atlassian.net/wiki>; rel="base"``) and in
  ``_links.next``; each page with ``id``, ``status``, ``title``, ``spaceId``, ``version.number``, and a
  ``body`` only when ``body-format`` was asked.
* ``GET /wiki/api/v2/pages/{id}?body-format=storage`` - "Get page by id": ``body.storage.value``; 404
  for a page that is gone ("Returned if the calling user does not have permission to view the
  requested page or the page was not found").
* ``GET /wiki/api/v2/pages/{id}/attachments`` and ``GET /wiki/api/v2/attachments/{id}`` - attachments
  with ``title``, ``mediaType``, ``fileSize``, ``version.number`` and ``downloadLink`` (relative to the
  ``base`` link, ``/download/attachments/<page>/<file>?version=..&api=v2``), which answers a redirect to
  a media host, as Confluence Cloud's does (here: ``localhost`` on the same port, another origin).
* HTTP Basic with an email and an API token ("Basic auth for REST APIs"); a wrong or revoked token 401.
* Rate limiting: a ``429`` with ``Retry-After`` ("Rate limiting"), and 5xx, served on cue.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.loopback import reply, serve, stop

EMAIL = "sync@example.com"
MAX_LIMIT = 250


@dataclass
class Logged:
    path: str
    query: dict[str, list[str]]
    status: int
    authorized: bool
    host: str


@dataclass
class Attachment:
    id: str
    title: str
    data: bytes
    media_type: str = "application/octet-stream"
    version: int = 1


@dataclass
class Page:
    id: str
    title: str
    storage: str
    version: int = 1
    status: str = "current"
    attachments: dict[str, Attachment] = field(default_factory=dict)


@dataclass
class Space:
    id: str
    key: str
    name: str
    pages: dict[str, Page] = field(default_factory=dict)


class ConfluenceDouble:
    """The double: spaces and pages to serve, tokens it accepts, failures to serve on cue, and a log."""

    def __init__(self, token: str = "atl-token-1") -> None:
        self.tokens = {token}
        self.token = token
        self.spaces: dict[str, Space] = {}
        self.log: list[Logged] = []
        self.busy: list[int] = []  # statuses to answer the next requests with (429 / 5xx)
        self.retry_after = "0"  # the Retry-After those answers carry
        # (path, query) -> a status to answer instead, or None: a failure on cue (a listing's second page)
        self.fail: Callable[[str, dict[str, list[str]]], int | None] | None = None
        self.lock = threading.Lock()
        self._next_id = 1000
        self.server = serve(lambda h, _: self._serve(h))
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.media = f"http://localhost:{self.port}"  # another origin: the credential must not follow there

    # content

    def new_id(self) -> str:
        with self.lock:
            self._next_id += 1
            return str(self._next_id)

    def space(self, key: str, name: str | None = None) -> Space:
        s = Space(self.new_id(), key, name or key)
        self.spaces[s.id] = s
        return s

    def page(self, space: Space, title: str, storage: str) -> Page:
        p = Page(self.new_id(), title, storage)
        space.pages[p.id] = p
        return p

    def edit(self, page: Page, storage: str | None = None, title: str | None = None) -> None:
        page.storage = storage if storage is not None else page.storage
        page.title = title if title is not None else page.title
        page.version += 1

    def attach(self, page: Page, title: str, data: bytes, media_type: str = "text/plain") -> Attachment:
        a = Attachment(f"att{self.new_id()}", title, data, media_type)
        page.attachments[a.id] = a
        return a

    def requests(self, since: int = 0) -> list[Logged]:
        return self.log[since:]

    def close(self) -> None:
        stop(self.server)

    # serving

    def _authorized(self, h: BaseHTTPRequestHandler) -> bool:
        header = h.headers.get("Authorization") or ""
        if not header.startswith("Basic "):
            return False
        try:
            email, _, token = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return email == EMAIL and token in self.tokens

    def _send(self, h: BaseHTTPRequestHandler, status: int, body: Any = None, headers: dict[str, str] | None = None,
              raw: bytes | None = None) -> None:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
        path, query, authorized, host = h.seen  # type: ignore[attr-defined]
        with self.lock:  # logged before the answer leaves, so a client that has it finds it in the log
            self.log.append(Logged(path, query, status, authorized, host))
        reply(h, status, data, "application/json" if raw is None else "application/octet-stream", headers)

    def _error(self, h: BaseHTTPRequestHandler, status: int, title: str) -> None:
        # The documented error shape of v2: {"errors": [{"status", "code", "title", "detail"}]}
        self._send(h, status, {"errors": [{"status": status, "code": title.upper().replace(" ", "_"),
                                           "title": title, "detail": None}]})

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        query = parse_qs(parts.query)
        host = (h.headers.get("Host") or "").split(":")[0]
        h.seen = (parts.path, query, bool(h.headers.get("Authorization")), host)  # type: ignore[attr-defined]
        self._answer(h, parts.path, query, self._authorized(h), host)

    def _answer(self, h: BaseHTTPRequestHandler, path: str, query: dict[str, list[str]], authorized: bool,
                host: str) -> int:
        with self.lock:
            busy = self.busy.pop(0) if self.busy else None
        if busy is not None:
            self._send(h, busy, {"message": "Rate limit exceeded" if busy == 429 else "Service unavailable"},
                       {"Retry-After": self.retry_after})
            return busy
        failed = self.fail(path, query) if self.fail is not None else None
        if failed is not None:
            self._error(h, failed, "Internal Server Error" if failed >= 500 else "Error")
            return failed
        if path.startswith("/media/"):
            return self._media(h, path, query)
        if not authorized:
            self._error(h, 401, "Unauthorized")
            return 401
        segments = path.strip("/").split("/")
        if segments[:3] == ["wiki", "api", "v2"]:
            return self._api(h, segments[3:], query)
        if segments[:3] == ["wiki", "download", "attachments"] and len(segments) == 5:
            att = self._attachment_named(segments[3], segments[4])
            if att is None:
                self._error(h, 404, "Not Found")
                return 404
            # Confluence Cloud answers a download link with a redirect to its media service.
            self._send(h, 302, None, {"Location": f"{self.media}/media/{att.id}?token=short-lived"})
            return 302
        self._error(h, 404, "Not Found")
        return 404

    def _media(self, h: BaseHTTPRequestHandler, path: str, query: dict[str, list[str]]) -> int:
        att = self._attachment(path.rsplit("/", 1)[-1])
        if att is None or query.get("token") != ["short-lived"]:
            self._send(h, 404, {"message": "not found"})
            return 404
        self._send(h, 200, raw=att.data)
        return 200

    def _limit(self, query: dict[str, list[str]], default: int) -> int | None:
        try:
            limit = int(query.get("limit", [str(default)])[0])
        except ValueError:
            return None
        return limit if 1 <= limit <= MAX_LIMIT else None

    def _paged(self, h: BaseHTTPRequestHandler, path: str, query: dict[str, list[str]], items: list[dict[str, Any]],
               default: int) -> int:
        limit = self._limit(query, default)
        if limit is None:
            self._error(h, 400, "Bad Request")
            return 400
        cursor = query.get("cursor", [""])[0]
        try:
            start = int(base64.urlsafe_b64decode(cursor.encode()).decode()) if cursor else 0
        except ValueError:
            self._error(h, 400, "Bad Request")
            return 400
        chunk = items[start:start + limit]
        links: dict[str, str] = {"base": f"{self.url}/wiki"}
        headers: dict[str, str] = {}
        if start + limit < len(items):
            token = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
            kept = "&".join(f"{k}={quote(v[0])}" for k, v in query.items() if k != "cursor")
            links["next"] = f"{path}?{kept}&cursor={token}"
            headers["Link"] = f'<{links["next"]}>; rel="next", <{self.url}/wiki>; rel="base"'
        self._send(h, 200, {"results": chunk, "_links": links}, headers)
        return 200

    def _page_json(self, space: Space, page: Page, body_format: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": page.id, "status": page.status, "title": page.title, "spaceId": space.id, "parentId": None,
            "parentType": "page", "position": 0, "authorId": "557058:abc", "ownerId": "557058:abc",
            "createdAt": "2026-12-01T10:00:00.000Z",
            "version": {"createdAt": "2026-12-01T10:00:00.000Z", "message": "", "number": page.version,
                        "minorEdit": False, "authorId": "557058:abc"},
            "_links": {"webui": f"/spaces/{space.key}/pages/{page.id}/{quote(page.title)}",
                       "editui": f"/pages/resumedraft.action?draftId={page.id}", "tinyui": "/x/AbC"},
        }
        if body_format == "storage":
            out["body"] = {"storage": {"representation": "storage", "value": page.storage}}
        return out

    def _attachment_json(self, page: Page, att: Attachment) -> dict[str, Any]:
        return {"id": att.id, "status": "current", "title": att.title, "createdAt": "2026-12-01T10:00:00.000Z",
                "pageId": page.id, "mediaType": att.media_type, "mediaTypeDescription": "", "comment": "",
                "fileId": f"file-{att.id}", "fileSize": len(att.data),
                "webuiLink": f"/pages/viewpageattachments.action?pageId={page.id}",
                "downloadLink": f"/download/attachments/{page.id}/{quote(att.title)}?version={att.version}"
                                "&modificationDate=1764583200000&api=v2",
                "version": {"createdAt": "2026-12-01T10:00:00.000Z", "number": att.version, "minorEdit": False},
                "_links": {"webui": f"/pages/viewpageattachments.action?pageId={page.id}",
                           "download": f"/download/attachments/{page.id}/{quote(att.title)}?api=v2"}}

    def _find_page(self, page_id: str) -> tuple[Space, Page] | None:
        for s in self.spaces.values():
            if page_id in s.pages:
                return s, s.pages[page_id]
        return None

    def _attachment(self, att_id: str) -> Attachment | None:
        found = self._owner(att_id)
        return found[1] if found else None

    def _owner(self, att_id: str) -> tuple[Page, Attachment] | None:
        for s in self.spaces.values():
            for p in s.pages.values():
                if att_id in p.attachments:
                    return p, p.attachments[att_id]
        return None

    def _attachment_named(self, page_id: str, title: str) -> Attachment | None:
        found = self._find_page(page_id)
        return next((a for a in found[1].attachments.values() if a.title == unquote(title)), None) if found else None

    def _api(self, h: BaseHTTPRequestHandler, rest: list[str], query: dict[str, list[str]]) -> int:
        path = "/wiki/api/v2/" + "/".join(rest)
        if rest == ["spaces"]:
            keys = set(",".join(query.get("keys", [])).split(",")) - {""}
            found = [{"id": s.id, "key": s.key, "name": s.name, "type": "global", "status": "current",
                      "authorId": "557058:abc", "createdAt": "2026-12-01T10:00:00.000Z", "homepageId": None,
                      "_links": {"webui": f"/spaces/{s.key}"}}
                     for s in self.spaces.values() if not keys or s.key in keys]
            return self._paged(h, path, query, found, 25)
        if len(rest) == 3 and rest[0] == "spaces" and rest[2] == "pages":
            space = self.spaces.get(rest[1])
            if space is None:
                self._error(h, 404, "Not Found")
                return 404
            statuses = set(",".join(query.get("status", ["current,archived"])).split(","))
            fmt = query.get("body-format", [None])[0]
            pages = [self._page_json(space, p, fmt) for p in space.pages.values() if p.status in statuses]
            return self._paged(h, path, query, pages, 25)
        if len(rest) == 2 and rest[0] == "pages":
            found = self._find_page(rest[1])
            if found is None:
                self._error(h, 404, "Not Found")
                return 404
            self._send(h, 200, self._page_json(found[0], found[1], query.get("body-format", [None])[0]))
            return 200
        if len(rest) == 3 and rest[0] == "pages" and rest[2] == "attachments":
            found = self._find_page(rest[1])
            if found is None:
                self._error(h, 404, "Not Found")
                return 404
            atts = [self._attachment_json(found[1], a) for a in found[1].attachments.values()]
            return self._paged(h, path, query, atts, 50)
        if len(rest) == 2 and rest[0] == "attachments":
            owner = self._owner(rest[1])
            if owner is None:
                self._error(h, 404, "Not Found")
                return 404
            self._send(h, 200, self._attachment_json(*owner))
            return 200
        self._error(h, 404, "Not Found")
        return 404

    def secret(self) -> dict[str, str]:
        return {"email": EMAIL, "api_token": self.token}
