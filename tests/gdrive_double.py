"""A test double of the Google Drive API v3 and Google's OAuth token endpoint, on loopback.

There is no local Drive server, so this is a real HTTP server (``ThreadingHTTPServer``) that answers
the requests the gdrive connector makes in the shapes Google documents; tests/integration/sync/
test_gdrive_connector.py checks its answers against the documented examples quoted below.

* ``POST /token`` - the service-account sign-in ("Using OAuth 2.0 for Server to Server
  Applications", developers.google.com/identity/protocols/oauth2/service-account, "Making the
  access token request"): ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`` and an RS256
  ``assertion`` whose claims are ``iss`` (the key's client_email), ``scope``, ``aud`` (the token
  URL), ``iat`` and ``exp`` (at most an hour later). The double checks the signature with the key's
  public half and answers ``{"access_token", "token_type": "Bearer", "expires_in"}``; a bad
  assertion is ``400 {"error": "invalid_grant", ...}``.
* ``GET /drive/v3/files`` - ``files.list`` (developers.google.com/drive/api/reference/rest/v3/files/list):
  ``q`` (only ``'<id>' in parents and trashed = false`` is understood; anything else is the
  documented ``400 invalid`` on parameter ``q``), ``pageSize`` (1-1000, default 100),
  ``pageToken``, ``fields`` (the answer carries only what was asked; default ``kind, id, name,
  mimeType``), ``corpora`` (``user`` by default; ``drive`` needs ``driveId`` and
  ``includeItemsFromAllDrives``), ``supportsAllDrives`` / ``includeItemsFromAllDrives`` (a shared
  drive's items are left out without both). ``nextPageToken`` is "absent if the end of the files
  list has been reached" (FileList).
* ``GET /drive/v3/files/{id}?alt=media`` - a blob's bytes ("Download and export files",
  developers.google.com/drive/api/guides/manage-downloads); a Google Docs Editors file answers
  ``403 fileNotDownloadable``; a shared drive's file is ``404`` without ``supportsAllDrives``.
* ``GET /drive/v3/files/{id}/export?mimeType=`` - ``files.export``: "the exported content is
  limited to 10 MB" (``403 exportSizeLimitExceeded``, "This file is too large to be exported.").
* Errors are the bodies of "Resolve errors" (developers.google.com/drive/api/guides/handle-errors):
  ``401 authError`` for an expired token, ``403``/``429 rateLimitExceeded`` (with ``Retry-After``
  when a test asks), ``404 notFound``, 5xx.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.loopback import reply, serve, stop

FOLDER = "application/vnd.google-apps.folder"
SHORTCUT = "application/vnd.google-apps.shortcut"
DOC = "application/vnd.google-apps.document"
SHEET = "application/vnd.google-apps.spreadsheet"
SLIDES = "application/vnd.google-apps.presentation"
DRAWING = "application/vnd.google-apps.drawing"
EXPORT_FORMATS = {
    DOC: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    SHEET: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    SLIDES: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}
EXPORT_LIMIT = 10 * 1024 * 1024
DRIVE_SCOPE = "https://www.googleapis.com/auth/drive.readonly"


def error(code: int, reason: str, message: str, domain: str = "global", **where: str) -> dict[str, Any]:
    """A Drive error body in the shape of "Resolve errors"."""
    one = {"domain": domain, "reason": reason, "message": message, **where}
    return {"error": {"errors": [one], "code": code, "message": message}}


# The documented examples ("Resolve errors", developers.google.com/drive/api/guides/handle-errors),
# as the page shows them; the double answers these shapes.
DOCUMENTED = {
    "401 authError": json.loads("""{"error": {"errors": [{"domain": "global", "reason": "authError",
        "message": "Invalid Credentials", "locationType": "header", "location": "Authorization"}],
        "code": 401, "message": "Invalid Credentials"}}"""),
    "403 rateLimitExceeded": json.loads("""{"error": {"errors": [{"domain": "usageLimits",
        "message": "Rate Limit Exceeded", "reason": "rateLimitExceeded"}], "code": 403,
        "message": "Rate Limit Exceeded"}}"""),
    "404 notFound": json.loads("""{"error": {"errors": [{"domain": "global", "reason": "notFound",
        "message": "File not found {fileId}"}], "code": 404, "message": "File not found: {fileId}"}}"""),
    "429 rateLimitExceeded": json.loads("""{"error": {"errors": [{"domain": "usageLimits",
        "reason": "rateLimitExceeded", "message": "Rate Limit Exceeded"}], "code": 429,
        "message": "Rate Limit Exceeded"}}"""),
}


def drive_error(status: int, reason: str, file_id: str = "") -> dict[str, Any]:
    if reason == "authError":
        return error(401, "authError", "Invalid Credentials", locationType="header", location="Authorization")
    if reason in ("rateLimitExceeded", "userRateLimitExceeded"):
        words = "Rate Limit Exceeded" if reason == "rateLimitExceeded" else "User Rate Limit Exceeded"
        return error(status, reason, words, domain="usageLimits")
    if reason == "notFound":
        body = error(404, "notFound", f"File not found {file_id}")
        body["error"]["message"] = f"File not found: {file_id}"
        return body
    if reason == "exportSizeLimitExceeded":
        return error(403, reason, "This file is too large to be exported.")
    if reason == "fileNotDownloadable":
        return error(403, reason, "Only files with binary content can be downloaded. Use Export with Docs "
                                  "Editors files.", locationType="parameter", location="alt")
    if reason == "invalid":
        return error(400, "invalid", "Invalid Value", locationType="parameter", location="q")
    if reason == "backendError":
        return error(status, "backendError", "Backend Error")
    return error(status, reason, reason)


def new_id(prefix: str = "1", length: int = 33) -> str:
    """An id in the alphabet Google issues (letters, digits, - and _)."""
    return (prefix + secrets.token_urlsafe(length))[:length]


@dataclass
class Item:
    id: str
    name: str
    mime: str
    parent: str
    content: bytes = b""
    version: int = 1
    drive: str | None = None
    target: str | None = None
    trashed: bool = False

    def resource(self) -> dict[str, Any]:
        """The file resource (developers.google.com/drive/api/reference/rest/v3/files): int64 fields
        (``size``, ``version``) are strings; ``md5Checksum`` only for a blob."""
        out: dict[str, Any] = {"kind": "drive#file", "id": self.id, "name": self.name, "mimeType": self.mime,
                               "parents": [self.parent], "version": str(self.version), "trashed": self.trashed}
        if self.drive:
            out["driveId"] = self.drive
        if not self.mime.startswith("application/vnd.google-apps."):
            out["md5Checksum"] = hashlib.md5(self.content, usedforsecurity=False).hexdigest()
            out["size"] = str(len(self.content))
        elif self.mime in EXPORT_FORMATS:
            out["size"] = "1024"  # a Docs Editors file's size is its storage, not an export's length
        if self.mime == SHORTCUT:
            out["shortcutDetails"] = {"targetId": self.target, "targetMimeType": "application/pdf"}
        return out


@dataclass
class Request:
    kind: str  # token, list, download, export
    path: str
    params: dict[str, str]
    status: int = 0


@dataclass
class Fault:
    kind: str
    status: int
    reason: str
    retry_after: str | None = None
    file_id: str | None = None
    after: int = 0  # matching requests let through before this one fails


def select(resource: dict[str, Any], fields: str) -> dict[str, Any]:
    """The partial response ``fields`` asks for: ``a,b,c(d,e(f))`` keeps those keys (a nested
    selection keeps the whole nested object, as the double's needs go)."""
    keys, depth, word = [], 0, ""
    for ch in fields + ",":
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            keys.append(word.strip())
            word = ""
        elif depth == 0 and ch not in "()":
            word += ch
    return {k: resource[k] for k in keys if k in resource}


_Q = re.compile(r"'([A-Za-z0-9_-]+)' in parents and trashed = false")


class DriveDouble:
    """One Drive, its service account's token endpoint, and the faults a test asks for."""

    def __init__(self, key: dict[str, str]) -> None:
        from cryptography.hazmat.primitives import serialization

        private = serialization.load_pem_private_key(key["private_key"].encode(), password=None)
        self.public_pem = private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        self.email = key["client_email"]
        self.items: dict[str, Item] = {}
        self.tokens: set[str] = set()
        self.log: list[Request] = []
        self.faults: deque[Fault] = deque()
        self.pages: dict[str, tuple[str, int]] = {}
        self.export_limit = EXPORT_LIMIT
        self.incomplete_search = False
        self.lock = threading.Lock()
        self.root = new_id("0B", 28)
        self.httpd = serve(lambda h, method: self.answer(h, method, h.rfile.read(
            int(h.headers.get("Content-Length") or 0)).decode() if method == "POST" else ""), methods=("GET", "POST"))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.token_url = f"{self.url}/token"

    def close(self) -> None:
        stop(self.httpd)

    # --- the test's hands on the drive ----------------------------------------------------------------

    def add(self, name: str, parent: str | None = None, content: bytes = b"", mime: str = "text/plain", *,
            drive: str | None = None, target: str | None = None) -> str:
        item = Item(new_id(), name, mime, parent or self.root, content, drive=drive, target=target)
        with self.lock:
            self.items[item.id] = item
        return item.id

    def folder(self, name: str, parent: str | None = None, *, drive: str | None = None) -> str:
        return self.add(name, parent, mime=FOLDER, drive=drive)

    def shared_drive(self) -> str:
        return new_id("0A", 19)

    def update(self, file_id: str, content: bytes) -> None:
        with self.lock:
            item = self.items[file_id]
            item.content, item.version = content, item.version + 1

    def delete(self, file_id: str) -> None:
        with self.lock:
            self.items.pop(file_id, None)

    def trash(self, file_id: str) -> None:
        with self.lock:
            self.items[file_id].trashed = True

    def expire_tokens(self) -> None:
        with self.lock:
            self.tokens.clear()

    def fail(self, kind: str, status: int, reason: str, retry_after: str | None = None, times: int = 1,
             file_id: str | None = None, after: int = 0) -> None:
        for n in range(times):
            self.faults.append(Fault(kind, status, reason, retry_after, file_id, after if n == 0 else 0))

    def requests(self, kind: str | None = None) -> list[Request]:
        return [r for r in self.log if kind is None or r.kind == kind]

    # --- the server ------------------------------------------------------------------------------------

    def answer(self, h: BaseHTTPRequestHandler, method: str, body: str) -> None:
        parts = urlsplit(h.path)
        params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        path = parts.path
        if method == "POST" and path == "/token":
            kind = "token"
        elif method == "GET" and path == "/drive/v3/files":
            kind = "list"
        elif method == "GET" and path.startswith("/drive/v3/files/") and path.endswith("/export"):
            kind = "export"
        elif method == "GET" and path.startswith("/drive/v3/files/"):
            kind = "download" if params.get("alt") == "media" else "get"
        else:
            self._send(h, 404, error(404, "notFound", "Not Found"))
            return
        request = Request(kind, path, params)
        with self.lock:
            self.log.append(request)
            fault = next((f for f in self.faults if f.kind == kind), None)
            if fault is not None and fault.after > 0:
                fault.after -= 1
                fault = None
            elif fault is not None:
                self.faults.remove(fault)
        if fault is not None:
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            request.status = fault.status
            self._send(h, fault.status, drive_error(fault.status, fault.reason, fault.file_id or ""), headers)
            return
        if kind == "token":
            request.status, out = self._token(body)
            self._send(h, request.status, out)
            return
        if h.headers.get("Authorization", "").removeprefix("Bearer ") not in self.tokens:
            request.status = 401
            self._send(h, 401, drive_error(401, "authError"))
            return
        if kind == "list":
            request.status, out = self._list(params)
            self._send(h, request.status, out)
            return
        file_id = path.removeprefix("/drive/v3/files/").removesuffix("/export")
        item = self.items.get(file_id)
        if item is None or (item.drive and kind == "download" and params.get("supportsAllDrives") != "true"):
            request.status = 404
            self._send(h, 404, drive_error(404, "notFound", file_id))
            return
        if kind == "download":
            if item.mime.startswith("application/vnd.google-apps."):
                request.status = 403
                self._send(h, 403, drive_error(403, "fileNotDownloadable"))
                return
            request.status = 200
            self._send_bytes(h, item.content, item.mime)
        elif kind == "export":
            wanted = params.get("mimeType")
            if item.mime not in EXPORT_FORMATS:
                request.status = 403
                self._send(h, 403, error(403, "fileNotExportable", "Export only supports Docs Editors files."))
            elif wanted != EXPORT_FORMATS[item.mime]:
                request.status = 400
                self._send(h, 400, error(400, "badRequest", "The requested conversion is not supported.",
                                         locationType="parameter", location="convertTo"))
            elif len(item.content) > self.export_limit:
                request.status = 403
                self._send(h, 403, drive_error(403, "exportSizeLimitExceeded"))
            else:
                request.status = 200
                self._send_bytes(h, item.content, wanted)
        else:
            request.status = 200
            self._send(h, 200, select(item.resource(), params.get("fields") or "kind,id,name,mimeType"))

    def _token(self, body: str) -> tuple[int, dict[str, Any]]:
        from google.auth import jwt

        form = {k: v[-1] for k, v in parse_qs(body).items()}
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return 400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type"}
        try:
            claims = jwt.decode(form.get("assertion", ""), certs=self.public_pem,  # type: ignore[no-untyped-call]
                                audience=self.token_url)
        except ValueError:
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        if claims.get("iss") != self.email or claims.get("scope") != DRIVE_SCOPE \
                or int(claims["exp"]) - int(claims["iat"]) > 3600:
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT: claims."}
        token = "ya29." + secrets.token_urlsafe(24)
        with self.lock:
            self.tokens.add(token)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": 3599}

    def _list(self, params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        token = params.get("pageToken")
        if token:
            if token not in self.pages:
                return 400, error(400, "invalid", "Invalid Value", locationType="parameter", location="pageToken")
            folder, offset = self.pages[token]
        else:
            found = _Q.fullmatch(params.get("q", ""))
            if found is None:
                return 400, drive_error(400, "invalid")
            folder, offset = found.group(1), 0
        all_drives = params.get("supportsAllDrives") == "true" and params.get("includeItemsFromAllDrives") == "true"
        corpora = params.get("corpora", "user")
        if corpora == "drive" and (not params.get("driveId") or params.get("includeItemsFromAllDrives") != "true"):
            return 400, error(400, "badRequest", "The driveId parameter must be specified if and only if corpora "
                                                 "is set to drive.", locationType="parameter", location="driveId")
        size = int(params.get("pageSize") or 100)
        if not 1 <= size <= 1000:
            return 400, error(400, "invalid", "Invalid Value", locationType="parameter", location="pageSize")
        with self.lock:
            children = [i for i in self.items.values() if i.parent == folder and not i.trashed
                        and (i.drive is None or all_drives)
                        and (corpora != "drive" or i.drive == params.get("driveId"))
                        and (corpora != "user" or i.drive is None)]
        children.sort(key=lambda i: i.id)
        page = children[offset:offset + size]
        out: dict[str, Any] = {"kind": "drive#fileList", "incompleteSearch": self.incomplete_search}
        if offset + size < len(children):
            nxt = secrets.token_urlsafe(12)
            self.pages[nxt] = (folder, offset + size)
            out["nextPageToken"] = nxt
        fields = params.get("fields")
        if fields:
            inner = re.search(r"files\((.*)\)", fields)
            out = select(out, fields)
            out["files"] = [select(i.resource(), inner.group(1) if inner else "kind,id,name,mimeType") for i in page]
        else:
            out["files"] = [select(i.resource(), "kind,id,name,mimeType") for i in page]
        return 200, out

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
              ) -> None:
        reply(h, status, json.dumps(body).encode(), "application/json; charset=UTF-8", headers)

    @staticmethod
    def _send_bytes(h: BaseHTTPRequestHandler, data: bytes, mime: str) -> None:
        reply(h, 200, data, mime)


def docx(*paragraphs: str) -> bytes:
    """A real .docx (what files.export answers for a Google Doc), via python-docx."""
    import io

    from docx import Document

    document = Document()
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
