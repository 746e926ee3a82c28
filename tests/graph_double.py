"""A test double of the Microsoft Graph drive API and the identity platform's token endpoint: a real
HTTP server on loopback (threaded ``http.server``) that answers the documented request and response
shapes. There is no local SharePoint; each shape below is the provider's documented one, and the page
it comes from is named beside it (tests/integration/sync/test_sharepoint_connector.py checks the
double against the documented examples themselves).

* Token (client credentials): ``POST /{tenant}/oauth2/v2.0/token`` with ``client_id``, ``scope``
  (``https://graph.microsoft.com/.default``), ``grant_type=client_credentials`` and a ``client_secret``
  or a ``client_assertion`` (a PS256 JWT, verified here against the certificate) -> ``{"token_type":
  "Bearer", "expires_in", "access_token"}``; a wrong secret -> ``401 {"error": "invalid_client",
  "error_description": "AADSTS7000215: ..."}``.
  https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-client-creds-grant-flow and
  https://learn.microsoft.com/en-us/entra/identity-platform/certificate-credentials
* Sites and drives: ``GET /v1.0/sites/{hostname}:/{server-relative-path}`` (site-getbypath),
  ``/sites/{id}/drive``, ``/sites/{id}/drives`` (``{"value": [...]}``), ``/users/{upn}/drive``,
  ``/drives/{id}``; an item by path ``/drives/{id}/root:/{path}:`` (driveitem-get).
* Delta: ``GET /v1.0/drives/{id}/root/delta`` pages of ``{"value": [...], "@odata.nextLink"}``, the last
  with ``"@odata.deltaLink"``; a deleted item carries ``"deleted": {}``; items carry
  ``parentReference.id`` and no ``path``; OneDrive for Business omits ``cTag`` on create/modify and
  ``cTag``, ``name`` on delete; ``token=latest`` answers an empty page with the latest deltaLink; a token
  the service no longer knows -> ``410 Gone`` (``resyncChangesApplyDifferences``) with a ``Location``.
  https://learn.microsoft.com/en-us/graph/api/driveitem-delta
* Content: ``GET /v1.0/drives/{id}/root:/{path}:/content`` -> ``302 Found`` to a pre-authenticated URL
  that needs no Authorization header; a missing item -> ``404 {"error": {"code": "itemNotFound"}}``.
  https://learn.microsoft.com/en-us/graph/api/driveitem-get-content and https://learn.microsoft.com/en-us/graph/errors
* Throttling: ``429 Too Many Requests`` with ``Retry-After`` (seconds).
  https://learn.microsoft.com/en-us/graph/throttling
* An expired access token: ``401 {"error": {"code": "InvalidAuthenticationToken", "message": "Access
  token has expired or is not yet valid."}}``. https://learn.microsoft.com/en-us/graph/errors
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.loopback import reply, serve, stop

TENANT = "11111111-2222-3333-4444-555555555555"
CLIENT_ID = "66666666-7777-8888-9999-000000000000"
SITE_HOST = "contoso.sharepoint.com"
SITE_PATH = "sites/Marketing"
USER = "adele@contoso.com"


@dataclass
class Item:
    id: str
    name: str
    parent: str | None
    kind: str  # root, folder, file, package
    content: bytes = b""
    version: int = 1
    changed: int = 0
    deleted: bool = False


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    authorized: bool  # an Authorization header was sent


@dataclass
class Fault:
    match: str  # a substring of the request's path (and query)
    status: int
    times: int
    retry_after: str | None = None


@dataclass
class GraphDouble:
    client_secret: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    certificate_pem: bytes | None = None  # a certificate credential the token endpoint accepts
    page_size: int = 200
    business: bool = True  # OneDrive for Business's delta: no cTag on create/modify
    drive_id: str = field(default_factory=lambda: "b!" + secrets.token_urlsafe(24))
    log: list[Request] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    tokens: set[str] = field(default_factory=set)
    forgotten_tokens: set[str] = field(default_factory=set)  # delta tokens answered 410
    assertions: list[dict[str, Any]] = field(default_factory=list)
    link_base: str | None = None  # where nextLink/deltaLink point (a test's wrong host), else the double
    download_base: str | None = None  # where the content endpoint redirects, else the double

    def __post_init__(self) -> None:
        self.seq = 0
        self.items: dict[str, Item] = {}
        self.root = self._add("root", None, "root")
        self.site_id = f"{SITE_HOST},{uuid.uuid4()},{uuid.uuid4()}"
        self._lock = threading.Lock()
        self.server = serve(self._handle, methods=("GET", "POST"))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        stop(self.server)

    # --- the drive's contents -------------------------------------------------------------------------

    def _add(self, name: str, parent: str | None, kind: str, content: bytes = b"") -> Item:
        self.seq += 1
        item = Item(f"01{secrets.token_hex(15).upper()}", name, parent, kind, content, changed=self.seq)
        self.items[item.id] = item
        return item

    def _at(self, path: str) -> Item | None:
        at = self.root
        for name in [p for p in path.split("/") if p]:
            found = next((i for i in self.items.values() if i.parent == at.id and i.name == name and not i.deleted),
                         None)
            if found is None:
                return None
            at = found
        return at

    def put(self, path: str, content: bytes, kind: str = "file") -> Item:
        """Write a file (its folders made as needed): a new version when it exists."""
        *folders, name = path.split("/")
        at = self.root
        for folder in folders:
            at = self._at_child(at, folder) or self._add(folder, at.id, "folder")
        existing = self._at_child(at, name)
        if existing is not None:
            self.seq += 1
            existing.content, existing.version, existing.changed = content, existing.version + 1, self.seq
            return existing
        return self._add(name, at.id, kind, content)

    def _at_child(self, parent: Item, name: str) -> Item | None:
        return next((i for i in self.items.values() if i.parent == parent.id and i.name == name and not i.deleted),
                    None)

    def delete(self, path: str) -> None:
        """Delete a file, or a folder with everything in it."""
        item = self._at(path)
        assert item is not None, path
        self.seq += 1
        gone = [item]
        while gone:
            at = gone.pop()
            at.deleted, at.changed = True, self.seq
            gone += [i for i in self.items.values() if i.parent == at.id and not i.deleted]

    def requests(self, since: int = 0, kind: str | None = None) -> list[Request]:
        out = self.log[since:]
        return [r for r in out if kind is None or kind in r.path]

    def downloads(self, since: int = 0) -> int:
        return sum(1 for r in self.log[since:] if r.path.startswith("/download/"))

    # --- shapes ---------------------------------------------------------------------------------------------

    def _resource(self, item: Item, in_delta: bool = False) -> dict[str, Any]:
        if item.deleted:
            out: dict[str, Any] = {"id": item.id, "deleted": {"state": "deleted"},
                                   "folder" if item.kind == "folder" else "file": {},
                                   "parentReference": {"driveId": self.drive_id, "id": item.parent}}
            if not self.business:
                out["name"] = item.name
            return out
        out = {"id": item.id, "name": item.name, "eTag": f'"{{{item.id}}},{item.version}"',
               "lastModifiedDateTime": "2026-12-01T10:00:00Z",
               "parentReference": {"driveId": self.drive_id, "driveType": "documentLibrary", "id": item.parent}}
        if not in_delta and item.parent is not None:
            out["parentReference"]["path"] = "/drive/root:"  # a plain GET carries the path; delta does not
        if item.kind == "root":
            out.update(root={}, folder={"childCount": 0}, name="root")
            out.pop("parentReference")
        elif item.kind == "folder":
            out["folder"] = {"childCount": sum(1 for i in self.items.values() if i.parent == item.id)}
        else:
            digest = hashlib.sha1(item.content).digest()  # a stand-in for the quickXorHash's 20 bytes
            out.update(size=len(item.content), file={"mimeType": "application/octet-stream",
                                                     "hashes": {"quickXorHash": base64.b64encode(digest).decode()}})
            if item.kind == "package":
                out.pop("file")
                out["package"] = {"type": "oneNote"}
            if not (in_delta and self.business):
                out["cTag"] = f'"c:{{{item.id}}},{item.version}"'
        return out

    def _delta(self, h: BaseHTTPRequestHandler, query: dict[str, list[str]]) -> None:
        token = (query.get("token") or [None])[0]
        top = min(int((query.get("$top") or [self.page_size])[0]), self.page_size)
        link = f"{self.link_base or self.url}/v1.0/drives/{self.drive_id}/root/delta"
        if token == "latest":
            return self._json(h, 200, {"value": [], "@odata.deltaLink": f"{link}?token=seq.{self.seq}"})
        if token in self.forgotten_tokens:
            return self._json(h, 410, {"error": {"code": "resyncRequired", "message": "Resync required.",
                                                 "innerError": {"code": "resyncChangesApplyDifferences"}}},
                              {"Location": link})
        since, offset = 0, 0
        if token is not None:
            kind, *rest = token.split(".")
            since = int(rest[0])
            offset = int(rest[1]) if kind == "page" else 0
        # the whole hierarchy (tombstones too, as the documented first page shows), or the changes since,
        # parents before their children
        chosen = [i for i in self.items.values() if i.changed > since]
        chosen.sort(key=lambda i: (self._depth(i), i.changed))
        page = chosen[offset:offset + top]
        body: dict[str, Any] = {"value": [self._resource(i, in_delta=True) for i in page]}
        if offset + top < len(chosen):
            body["@odata.nextLink"] = f"{link}?token=page.{since}.{offset + top}"
        else:
            body["@odata.deltaLink"] = f"{link}?token=seq.{self.seq}"
        self._json(h, 200, body)

    def _depth(self, item: Item) -> int:
        depth, at = 0, item
        while at.parent is not None:
            depth, at = depth + 1, self.items[at.parent]
        return depth

    def _drive(self) -> dict[str, Any]:
        return {"id": self.drive_id, "name": "Documents", "driveType": "documentLibrary",
                "webUrl": f"https://{SITE_HOST}/{SITE_PATH}/Shared%20Documents"}

    # --- the server -----------------------------------------------------------------------------------------

    def _json(self, h: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        reply(h, status, json.dumps(body).encode(), "application/json", headers)

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(h.path)
        path, query = unquote(parts.path), parse_qs(parts.query)
        with self._lock:
            self.log.append(Request(method, path, query, "Authorization" in h.headers))
            for fault in self.faults:
                if fault.times > 0 and fault.match in h.path:
                    fault.times -= 1
                    headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                    code = {429: "TooManyRequests", 403: "accessDenied"}.get(fault.status, "serviceNotAvailable")
                    return self._json(h, fault.status, {"error": {"code": code, "message": "Try again."}}, headers)
            if method == "POST" and path.endswith("/oauth2/v2.0/token"):
                return self._token(h, path)
            if path.startswith("/download/"):
                if "Authorization" in h.headers:  # a pre-authenticated URL takes none
                    return self._json(h, 401, {"error": {"code": "unauthenticated"}})
                item = self.items.get(path.removeprefix("/download/"))
                if item is None or item.deleted or query.get("tempauth") != ["v1." + item.id]:
                    return self._json(h, 404, {"error": {"code": "itemNotFound", "message": "Item not found"}})
                h.send_response(200)
                h.send_header("Content-Length", str(len(item.content)))
                h.end_headers()
                h.wfile.write(item.content)
                return None
            if not path.startswith("/v1.0/"):
                return self._json(h, 404, {"error": {"code": "itemNotFound"}})
            auth = h.headers.get("Authorization", "")
            if not auth.startswith("Bearer ") or auth.removeprefix("Bearer ") not in self.tokens:
                return self._json(h, 401, {"error": {"code": "InvalidAuthenticationToken",
                                                     "message": "Access token has expired or is not yet valid."}})
            return self._graph(h, path.removeprefix("/v1.0"), query)

    def _graph(self, h: BaseHTTPRequestHandler, path: str, query: dict[str, list[str]]) -> None:
        not_found = {"error": {"code": "itemNotFound", "message": "The resource could not be found."}}
        if path in (f"/sites/{SITE_HOST}:/{SITE_PATH}", f"/sites/{SITE_HOST}:/{SITE_PATH}:"):
            return self._json(h, 200, {"id": self.site_id, "name": "Marketing",
                                       "webUrl": f"https://{SITE_HOST}/{SITE_PATH}"})
        if path in (f"/sites/{self.site_id}/drive", f"/users/{USER}/drive", f"/drives/{self.drive_id}"):
            return self._json(h, 200, self._drive())
        if path == f"/sites/{self.site_id}/drives":
            return self._json(h, 200, {"value": [self._drive(), {"id": "b!other", "name": "Archive"}]})
        prefix = f"/drives/{self.drive_id}/root"
        if not path.startswith(prefix):
            return self._json(h, 404, not_found)
        rest = path.removeprefix(prefix)
        if rest == "":
            return self._json(h, 200, self._resource(self.root))
        if rest == "/delta":
            return self._delta(h, query)
        if rest.startswith(":/"):
            target = rest[2:]
            content = target.endswith(":/content")
            target = target.removesuffix(":/content").removesuffix(":")
            item = self._at(target)
            if item is None:
                return self._json(h, 404, not_found)
            if content:
                h.send_response(302)
                where = f"{self.download_base or self.url}/download/{quote(item.id)}"
                h.send_header("Location", f"{where}?tempauth=v1.{item.id}")
                h.send_header("Content-Length", "0")
                h.end_headers()
                return None
            return self._json(h, 200, self._resource(item))
        return self._json(h, 404, not_found)

    def _token(self, h: BaseHTTPRequestHandler, path: str) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(h.rfile.read(length).decode()).items()}
        tenant = path.split("/")[1]
        ok = (tenant == TENANT and form.get("client_id") == CLIENT_ID and form.get("grant_type") == "client_credentials"
              and form.get("scope") == "https://graph.microsoft.com/.default")
        if ok and "client_secret" in form:
            ok = form["client_secret"] == self.client_secret
        elif ok:
            ok = (form.get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
                  and self._assertion_ok(form.get("client_assertion", ""), f"{self.url}{path}"))
        if not ok:
            return self._json(h, 401, {"error": "invalid_client", "error_description": (
                "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the "
                "client secret value, not the client secret ID."), "error_codes": [7000215]})
        token = secrets.token_urlsafe(24)
        self.tokens.add(token)
        return self._json(h, 200, {"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
                                   "access_token": token})

    def _assertion_ok(self, assertion: str, audience: str) -> bool:
        from cryptography import x509
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        if self.certificate_pem is None or assertion.count(".") != 2:
            return False

        def unb64(s: str) -> bytes:
            return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))

        head, body, sig = assertion.split(".")
        header, claims = json.loads(unb64(head)), json.loads(unb64(body))
        cert = x509.load_pem_x509_certificate(self.certificate_pem)
        thumb = base64.urlsafe_b64encode(cert.fingerprint(hashes.SHA256())).rstrip(b"=").decode()
        self.assertions.append({"header": header, "claims": claims})
        try:
            cert.public_key().verify(unb64(sig), f"{head}.{body}".encode(),  # type: ignore[union-attr,call-arg]
                                     padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32),  # type: ignore[arg-type]
                                     hashes.SHA256())
        except InvalidSignature:
            return False
        return (header.get("alg") == "PS256" and header.get("x5t#S256") == thumb and claims.get("aud") == audience
                and claims.get("iss") == CLIENT_ID and claims.get("sub") == CLIENT_ID)

    def expire_tokens(self) -> None:
        """Every access token issued so far is refused from now on (an hour passed)."""
        self.tokens.clear()

    def secret(self, **extra: str) -> dict[str, str]:
        return {"tenant_id": TENANT, "client_id": CLIENT_ID, "client_secret": self.client_secret,
                "authority": self.url, "graph_endpoint": self.url, **extra}


def self_signed() -> tuple[bytes, bytes]:
    """A certificate and its RSA private key (PEM), as an application's certificate credential."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sluice-sync")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))
