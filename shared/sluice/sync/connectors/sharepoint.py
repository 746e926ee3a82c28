"""A SharePoint site's document library, or a user's OneDrive, through Microsoft Graph (R-SYNC-7).

Files only: a library's files under one folder (the library's root by default), its subfolders
included. SharePoint lists, pages and OneNote notebooks are out of scope; a notebook (the
``package`` facet) is reported, not followed.

**The listing** is Graph's delta query on the drive's root (SharePoint and OneDrive for Business
answer delta on the root only): the first run enumerates the drive, page by page
(``@odata.nextLink``), and keeps the ``@odata.deltaLink`` the last page ends with. Each later run
asks that link first: an answer with no changes is "nothing changed" (nothing listed, decided or
removed: a token and one Graph request). A change anywhere in the drive (an edit, an addition, a deletion: a
``deleted`` facet) makes the run enumerate again, so what it lists is always the whole folder and a
file that is gone is removed; the enumeration costs requests, not downloads. Delta items carry no
path (Graph's remarks: "track items by id"), so the folder's files are found by walking each item's
``parentReference.id`` up to the folder.

**The change signal** before any byte is fetched is the item's ``cTag`` (its content's tag), and
where delta omits it (OneDrive for Business omits ``cTag`` on a create or modify) the file's
``quickXorHash``, else its ``eTag``; with the size, compared as an opaque token.

**A listing that knows whether it is whole**: cut by ``max_files`` or ``SYNC_MAX_KEYS_PER_RUN``, past
``MAX_PAGES`` pages, or stopped by a page that kept failing, it is not complete, the run removes
nothing, and no delta link is kept (the next run enumerates again).

**The credential** is the source's ``microsoft_app`` secret: an Entra ID application's tenant, client
id, and a client secret or a certificate (its private key signs the client assertion, PS256). The
token is the client-credentials grant, one form POST to the documented token endpoint through the
guarded client (not msal: it sends through ``requests``, beside the guard, and would add its own
dependencies to the layer for one request). Every call goes only to Graph's and the login service's
documented hosts, a download's redirect only to SharePoint's (``*.sharepoint.com``), or to hosts
the operator lists in ``SyncAllowedHosts``; the bearer token goes to the Graph endpoint alone (a
download's pre-authenticated URL is fetched without it). Throttling (``429`` with ``Retry-After``)
and ``5xx`` go through ``sluice.retry``; an access token that expires mid-run is asked for again once.
"""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NoReturn
from urllib.parse import quote, urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from sluice.config import SyncContextSettings
from sluice.outbound import OutboundPolicy
from sluice.retry import Failure, RetryPolicy
from sluice.sync.connectors.base import ConfigRefusal, Connector, RemoteFile, RemoteListing, SourceRefused, cut_at
from sluice.sync.outbound import EndpointNotAllowed, guarded_client, saas_url_problem, send_retried, sync_policy

SECRET_KIND = "microsoft_app"  # noqa: S105 - the kind of secret, not one
# Microsoft's documented hosts: the global service and the national clouds (US Government, China).
GRAPH_HOSTS = ("graph.microsoft.com", "graph.microsoft.us", "dod-graph.microsoft.us",
               "microsoftgraph.chinacloudapi.cn")
LOGIN_HOSTS = ("login.microsoftonline.com", "login.microsoftonline.us", "login.chinacloudapi.cn",
               "login.partner.microsoftonline.cn")
# Where the content endpoint's 302 sends a download (a pre-authenticated URL on the tenant's SharePoint).
DOWNLOAD_HOSTS = ("*.sharepoint.com", "*.sharepoint.us", "*.sharepoint-mil.us", "*.sharepoint.cn", "*.files.1drv.com")
DEFAULT_GRAPH = "https://graph.microsoft.com"
DEFAULT_LOGIN = "https://login.microsoftonline.com"
# A drive's enumeration past this many pages (of up to PAGE_SIZE items) is cut: not whole, nothing removed.
MAX_PAGES = 500
PAGE_SIZE = 500
MAX_JSON = 16 * 1024 * 1024  # one page of a listing
SELECT = "id,name,size,cTag,eTag,file,folder,package,root,deleted,parentReference,lastModifiedDateTime"
PACKAGE_NOTE = "A OneNote notebook or another package: packages are not followed, only files are synced."

_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DOMAIN = re.compile(r"(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+")
_SITE_SEGMENT = re.compile(r"[A-Za-z0-9._~-]{1,128}")
_DRIVE_ID = re.compile(r"[A-Za-z0-9!_-]{1,256}")
_UPN = re.compile(r"[A-Za-z0-9._%+'-]{1,113}@[A-Za-z0-9.-]{1,140}")
# Characters SharePoint refuses in a file or folder name (and control characters).
_NAME_BAD = re.compile(r'[\x00-\x1f"*:<>?\\|]')


def _folder(value: str) -> str:
    parts = [p for p in value.strip().strip("/").split("/")]
    if parts == [""]:
        return ""
    for part in parts:
        if part in ("", ".", "..") or part != part.strip() or _NAME_BAD.search(part) or len(part) > 255:
            raise ValueError("A folder is a path inside the library such as Reports/2026: names separated by /, "
                             "none empty, '.' or '..', none holding \" * : < > ? \\ | or a control character")
    return "/".join(parts)


class SharePointConfig(BaseModel):
    """Which library (a site's, a user's OneDrive, or a drive by id) and which folder of it. Never a
    credential: that is the source's secret_id."""

    model_config = ConfigDict(extra="forbid", title="SharePoint or OneDrive folder")

    site_url: str | None = Field(None, max_length=1024, description=(
        "The SharePoint site's address, e.g. https://contoso.sharepoint.com/sites/Marketing "
        "(one of site_url, user or drive_id)."))
    library: str | None = Field(None, min_length=1, max_length=255, description=(
        "The site's document library, by the name the site shows (default: the site's default library)."))
    user: str | None = Field(None, max_length=256, description=(
        "A user's OneDrive: their user principal name (name@contoso.com) or object id."))
    drive_id: str | None = Field(None, max_length=256, description="A drive's id, as Graph gives it (b!...).")
    folder: str = Field("", max_length=1024, description="A folder inside the library (default: all of it).")
    max_files: int = Field(5000, ge=1, le=100_000, description="The most files one run lists.")

    @field_validator("site_url")
    @classmethod
    def _site_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        site_url_parts(value)
        return value.rstrip("/")

    @field_validator("library")
    @classmethod
    def _library(cls, value: str | None) -> str | None:
        if value is not None and (value != value.strip() or any(ord(ch) < 32 for ch in value)):
            raise ValueError("A library's name holds no control characters or surrounding spaces")
        return value

    @field_validator("user")
    @classmethod
    def _user(cls, value: str | None) -> str | None:
        if value is not None and not (_GUID.fullmatch(value) or _UPN.fullmatch(value)):
            raise ValueError("A user is a user principal name (name@contoso.com) or an object id (a GUID)")
        return value

    @field_validator("drive_id")
    @classmethod
    def _drive_id(cls, value: str | None) -> str | None:
        if value is not None and not _DRIVE_ID.fullmatch(value):
            raise ValueError("A drive id is letters, digits, '!', '_' and '-', as Graph gives it")
        return value

    _check_folder = field_validator("folder")(_folder)

    def scope(self) -> str:
        """Where the kept delta link points: another library or folder starts over."""
        return json.dumps([self.site_url, self.library, self.user, self.drive_id, self.folder])


def site_url_parts(value: str) -> tuple[str, list[str]]:
    """A site's host and path segments, each checked before it reaches a Graph URL."""
    parts = urlsplit(value.strip())
    host = (parts.hostname or "").lower()
    if parts.scheme != "https" or not _DOMAIN.fullmatch(host) or parts.port is not None:
        raise ValueError("A site URL is https://<tenant>.sharepoint.com/sites/<name>, with no port")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValueError("A site URL carries no user name, query or fragment")
    segments = [s for s in parts.path.split("/") if s]
    if len(segments) > 8 or any(s in (".", "..") or not _SITE_SEGMENT.fullmatch(s) for s in segments):
        raise ValueError("A site URL's path is the site's, e.g. /sites/Marketing (letters, digits, . _ ~ -)")
    return host, segments


# --- the credential -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AppCredential:
    """A ``microsoft_app`` secret: where it may be used, and how the application proves itself."""

    tenant: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    private_key: str | None = field(default=None, repr=False)
    certificate: str | None = None
    authority: str = DEFAULT_LOGIN
    graph: str = DEFAULT_GRAPH

    @property
    def token_url(self) -> str:
        return f"{self.authority}/{quote(self.tenant, safe='')}/oauth2/v2.0/token"

    @property
    def scope(self) -> str:
        host = urlsplit(self.graph).hostname or ""
        return f"https://{host}/.default" if host in GRAPH_HOSTS else f"{DEFAULT_GRAPH}/.default"


def read_app(secret: str, policy: OutboundPolicy) -> AppCredential:
    """``{"tenant_id", "client_id", "client_secret"}`` or ``{"tenant_id", "client_id", "certificate",
    "private_key"}`` (PEM), with ``authority`` and ``graph_endpoint`` for a national cloud (or a test's
    double, listed by the operator). Refusals name the field, never its value."""
    try:
        value = json.loads(secret)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise SourceRefused("The source's microsoft_app secret is not a JSON object of a tenant_id, a client_id and "
                            "a client_secret (or a certificate with its private_key).")

    def text(name: str) -> str | None:
        v = value.get(name)
        return v.strip() if isinstance(v, str) and v.strip() else None

    tenant, client_id = (text("tenant_id") or "").lower(), text("client_id") or ""
    if not (_GUID.fullmatch(tenant) or _DOMAIN.fullmatch(tenant)):
        raise SourceRefused("The source's microsoft_app secret's tenant_id is not a tenant id (a GUID) or a "
                            "tenant's domain (contoso.onmicrosoft.com).")
    if not _GUID.fullmatch(client_id):
        raise SourceRefused("The source's microsoft_app secret's client_id is not an application (client) id.")
    client_secret, key, cert = text("client_secret"), text("private_key"), text("certificate")
    if client_secret is None and (key is None or cert is None):
        raise SourceRefused("The source's microsoft_app secret holds neither a client_secret nor a certificate "
                            "with its private_key.")
    ends: dict[str, str] = {}
    for name, default, hosts in (("authority", DEFAULT_LOGIN, LOGIN_HOSTS), ("graph_endpoint", DEFAULT_GRAPH,
                                                                             GRAPH_HOSTS)):
        url = (text(name) or default).rstrip("/")
        problem = saas_url_problem(url, hosts, policy)
        if problem is None and urlsplit(url).path not in ("", "/"):
            problem = "Must be the service's origin, with no path."
        if problem is not None:
            raise SourceRefused(f"The source's microsoft_app secret's {name}: {problem}")
        ends[name] = url
    return AppCredential(tenant, client_id, client_secret, key if client_secret is None else None,
                         cert if client_secret is None else None, ends["authority"], ends["graph_endpoint"])


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def client_assertion(app: AppCredential, now: float | None = None) -> str:
    """The certificate credential's JWT (Microsoft identity platform, "certificate credentials"):
    PS256, ``x5t#S256`` the certificate's SHA-256 thumbprint, audience the token endpoint."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    assert app.private_key is not None and app.certificate is not None
    try:
        cert = x509.load_pem_x509_certificate(app.certificate.encode())
        key = serialization.load_pem_private_key(app.private_key.encode(), password=None)
    except ValueError:
        raise SourceRefused("The source's microsoft_app secret's certificate or private_key is not PEM.") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise SourceRefused("The source's microsoft_app secret's private_key is not an RSA key.")
    issued = int(now if now is not None else time.time())
    header = {"alg": "PS256", "typ": "JWT",
              "x5t#S256": _b64url(cert.fingerprint(hashes.SHA256()))}
    claims = {"aud": app.token_url, "iss": app.client_id, "sub": app.client_id, "jti": str(uuid.uuid4()),
              "nbf": issued, "iat": issued, "exp": issued + 600}
    signing = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
    signature = key.sign(signing.encode(), padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32),
                         hashes.SHA256())
    return f"{signing}.{_b64url(signature)}"


# --- Graph over the guarded client ------------------------------------------------------------------------

class GraphError(Exception):
    """Graph (or the token endpoint) refused; ``code`` is its error code, or ``HTTP<status>``."""

    def __init__(self, code: str, status: int = 0) -> None:
        super().__init__(code)
        self.code, self.status = code, status


# A run's request gives up within a minute (a Retry-After longer than what is left ends it at once).
POLICY = RetryPolicy(max_attempts=5, base_delay=1.0, max_delay=15.0, total_seconds=60.0)


def _error_code(resp: httpx.Response) -> str:
    """Graph's ``{"error": {"code"}}``, or the token endpoint's ``{"error": "invalid_client"}``."""
    try:
        body = json.loads(resp.read()[:65536])
    except ValueError:
        body = None
    err = body.get("error") if isinstance(body, dict) else None
    code = err.get("code") if isinstance(err, dict) else err
    code = "".join(ch for ch in str(code or "") if ch.isalnum() or ch in "._-")[:64]
    return code or f"HTTP{resp.status_code}"


class Graph:
    """The few Graph requests a sync makes, with the app's token, retried by the one retry policy."""

    def __init__(self, app: AppCredential, client: httpx.Client, policy: OutboundPolicy,
                 retry: RetryPolicy = POLICY) -> None:
        self.app = app
        self.base = f"{app.graph}/v1.0"
        self._client = client
        self._policy = policy
        self._retry = retry
        self._token: str | None = None

    def _send(self, request: httpx.Request) -> httpx.Response:
        """``request`` sent until it is not a 429 or 5xx (the response streamed, for the caller to close)."""
        def give_up(failure: Failure, attempts: int, detail: str) -> NoReturn:
            raise GraphError(str(failure.kind)) from failure.cause

        return send_retried(self._retry, lambda: self._client.send(request, stream=True), give_up)

    def token(self, *, renew: bool = False) -> str:
        if self._token is not None and not renew:
            return self._token
        form = {"client_id": self.app.client_id, "scope": self.app.scope, "grant_type": "client_credentials"}
        if self.app.client_secret is not None:
            form["client_secret"] = self.app.client_secret
        else:
            form["client_assertion_type"] = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
            form["client_assertion"] = client_assertion(self.app)
        resp = self._send(self._client.build_request("POST", self.app.token_url, data=form))
        try:
            if resp.status_code != 200:
                raise GraphError(_error_code(resp), resp.status_code)
            body = json.loads(resp.read()[:65536])
        finally:
            resp.close()
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise GraphError("NoAccessToken")
        self._token = token
        return token

    def _authorized(self, method: str, url: str) -> httpx.Response:
        """``url`` (under the Graph endpoint, never elsewhere: the token goes nowhere else) with the
        token; a 401 (an access token that expired) asks for a new one, once."""
        if not url.startswith(self.base + "/"):
            raise GraphError("NotGraphURL")
        for renew in (False, True):
            request = self._client.build_request(method, url, headers={
                "Authorization": f"Bearer {self.token(renew=renew)}", "Accept": "application/json"})
            resp = self._send(request)
            if resp.status_code != 401 or renew:
                return resp
            resp.close()
        raise AssertionError("unreachable")

    def get(self, url: str) -> dict[str, Any]:
        resp = self._authorized("GET", url)
        try:
            if resp.status_code == 410:
                raise GraphError("resyncRequired", 410)
            if resp.status_code != 200:
                raise GraphError(_error_code(resp), resp.status_code)
            raw = bytearray()
            for chunk in resp.iter_bytes():
                raw += chunk
                if len(raw) > MAX_JSON:
                    raise GraphError("ResponseTooLarge")
        finally:
            resp.close()
        try:
            body = json.loads(raw)
        except ValueError:
            raise GraphError("NotJSON") from None
        if not isinstance(body, dict):
            raise GraphError("NotJSON")
        return body

    def path(self, *segments: str) -> str:
        return self.base + "/" + "/".join(segments)

    def download(self, url: str, out: Any, max_bytes: int) -> int:
        """The content endpoint's bytes (at most ``max_bytes`` + 1): its 302 is followed once, to a
        documented SharePoint host or one the operator listed, without the bearer token (the URL is
        pre-authenticated)."""
        resp = self._authorized("GET", url)
        try:
            if resp.status_code in (301, 302, 303, 307, 308):
                location = resp.headers.get("location") or ""
                resp.close()
                problem = saas_url_problem(location, DOWNLOAD_HOSTS, self._policy)
                if problem is not None:
                    raise EndpointNotAllowed("a download redirected to a host that is not SharePoint's")
                resp = self._send(self._client.build_request("GET", location))
            if resp.status_code != 200:
                raise GraphError(_error_code(resp), resp.status_code)
            written = 0
            for chunk in resp.iter_bytes():
                room = max_bytes + 1 - written
                out.write(chunk[:room])
                written += min(len(chunk), room)
                if written > max_bytes:
                    break
            return written
        finally:
            resp.close()


# --- the connector ------------------------------------------------------------------------------------------

@dataclass
class _Item:
    name: str
    parent: str | None
    kind: str  # file, folder, package, root, other
    size: int
    signal: str | None


def _signal(item: Mapping[str, Any]) -> str | None:
    if item.get("cTag"):
        return f"c:{item['cTag']}"
    hashes = (item.get("file") or {}).get("hashes") or {}
    for name in ("quickXorHash", "sha256Hash", "sha1Hash"):
        if hashes.get(name):
            return f"h:{hashes[name]}"
    return f"e:{item['eTag']}" if item.get("eTag") else None


def _kind(item: Mapping[str, Any]) -> str:
    for kind in ("root", "folder", "package", "file"):
        if kind in item:
            return kind
    return "other"


class SharePointConnector(Connector):
    CONNECTOR_TYPE = "sharepoint"
    TITLE = "SharePoint or OneDrive folder"
    CONFIG_MODEL = SharePointConfig
    SECRET_KIND: ClassVar[str | None] = SECRET_KIND
    CHANGE_SIGNAL = ("Graph's delta link answers 'nothing changed' in one request; otherwise each file's cTag (else "
                     "its quickXorHash, else its eTag) with its size, read from the listing before any download")

    def __init__(self, config: SharePointConfig, graph: Graph, state: Mapping[str, Any]) -> None:
        self.config = config
        self.graph = graph
        self.state = dict(state)
        self._drive: str | None = None
        self._kept_link()  # the drive the kept state names, so a run's downloads do not look it up again

    @classmethod
    def check(cls, model: BaseModel, settings: SyncContextSettings) -> ConfigRefusal | None:
        assert isinstance(model, SharePointConfig)
        named = [f for f in ("site_url", "user", "drive_id") if getattr(model, f) is not None]
        if not named:
            return ConfigRefusal("Name the library: a site_url, a user (their OneDrive) or a drive_id.", "site_url")
        if len(named) > 1:
            return ConfigRefusal(f"Name one of site_url, user or drive_id, not {' and '.join(named)}.", named[1])
        if model.library is not None and model.site_url is None:
            return ConfigRefusal("A library is chosen within a site: give site_url too, or leave library empty.",
                                 "library")
        return None

    @classmethod
    def open(cls, config: BaseModel, credential: str | None, *, external_id: str, settings: SyncContextSettings,
             client_factory: Any, state: Mapping[str, Any]) -> SharePointConnector:
        assert isinstance(config, SharePointConfig)
        if credential is None:
            raise SourceRefused("A sharepoint source needs its microsoft_app secret (an application's tenant, client "
                                "id and client secret or certificate); the deployment has no Microsoft credential.")
        policy = sync_policy(settings)
        app = read_app(credential, policy)
        client = guarded_client(policy, timeout=httpx.Timeout(30.0, read=120.0), max_redirects=0,
                                user_agent="sluice-sync (sharepoint)")
        return cls(config, Graph(app, client, policy), state)

    # the drive and the folder -------------------------------------------------------------------------------

    def drive_id(self) -> str:
        if self._drive is not None:
            return self._drive
        c, g = self.config, self.graph
        if c.drive_id is not None:
            drive = g.get(g.path("drives", quote(c.drive_id, safe="!")))
        elif c.user is not None:
            drive = g.get(g.path("users", quote(c.user, safe="@"), "drive"))
        else:
            assert c.site_url is not None
            host, segments = site_url_parts(c.site_url)
            where = host + (":/" + "/".join(quote(s, safe="") for s in segments) if segments else "")
            site_id = str(g.get(g.path("sites", where)).get("id") or "")
            if not re.fullmatch(r"[A-Za-z0-9.,_-]{1,512}", site_id):
                raise GraphError("NoSiteId")
            if c.library is None:
                drive = g.get(g.path("sites", site_id, "drive"))
            else:
                drives = g.get(g.path("sites", site_id, "drives")).get("value") or []
                named = next((d for d in drives if isinstance(d, dict) and d.get("name") == c.library), None)
                if named is None:
                    raise LookupError("The site has no document library of that name; check library.")
                drive = named
        found = str(drive.get("id") or "")
        if not _DRIVE_ID.fullmatch(found):
            raise GraphError("NoDriveId")
        self._drive = found
        return found

    def _item_path(self, *names: str) -> str:
        """``/drives/{id}/root`` or ``/drives/{id}/root:/<quoted path>:`` plus a suffix's segments."""
        if any(n in ("", ".", "..") for n in names):
            raise GraphError("NotAName")  # a label the run refuses anyway (R-SYNC-4); never a URL's dot-segment
        path = "/".join(p for p in (self.config.folder, *names) if p)
        root = "root" if not path else "root:/" + "/".join(quote(s, safe="") for s in path.split("/")) + ":"
        return self.graph.path("drives", quote(self.drive_id(), safe="!"), root)

    def address(self, key: str) -> str:
        return "sharepoint://" + "/".join(p for p in (self.drive_id(), self.config.folder, key) if p)

    # the listing --------------------------------------------------------------------------------------------

    def _pages(self, url: str) -> Iterator[dict[str, Any]]:
        """A delta feed's pages, following nextLink; the last carries the deltaLink."""
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page = self.graph.get(url)
            yield page
            nxt = page.get("@odata.nextLink")
            if not isinstance(nxt, str):
                return
            if nxt in seen:
                raise _Cut("The listing repeated a page it had already sent; nothing was removed.")
            seen.add(nxt)
            url = nxt
        raise _Cut(f"The drive's listing ran past {MAX_PAGES} pages, more than one run reads (Graph's delta lists a "
                   "whole drive, whatever the folder); nothing was removed.")

    def _kept_link(self) -> str | None:
        """The delta link the last successful run kept, when it is about this library and folder."""
        link, drive = self.state.get("delta_link"), self.state.get("drive")
        if (self.state.get("scope") == self._scope() and isinstance(link, str) and isinstance(drive, str)
                and link.startswith(self.graph.base + "/") and _DRIVE_ID.fullmatch(drive)):
            self._drive = self._drive or drive
            return link
        return None

    def list_files(self, limit: int | None = None) -> RemoteListing:
        cap = min(limit or self.config.max_files, self.config.max_files)
        pages = 0
        try:
            link = self._kept_link()
            if link is not None:
                try:
                    changes, new_link = self._changes(link)
                except GraphError as exc:
                    if exc.status != 410:  # an expired delta token: enumerate again, as Graph documents
                        raise
                else:
                    if not changes:
                        return RemoteListing([], True, state=self._state(new_link), unchanged=True)
            drive = self.drive_id()
            folder = self.graph.get(self._item_path())
            items: dict[str, _Item] = {}
            end: str | None = None
            for page in self._pages(self.graph.path("drives", quote(drive, safe="!"), "root",
                                                    f"delta?$select={SELECT}&$top={PAGE_SIZE}")):
                for raw in page.get("value") or []:
                    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
                        items.pop(raw["id"], None)  # the last occurrence of an item is its state
                        if "deleted" not in raw:
                            parent = (raw.get("parentReference") or {}).get("id")
                            items[raw["id"]] = _Item(str(raw.get("name") or ""), parent, _kind(raw),
                                                     int(raw.get("size") or 0), _signal(raw))
                pages += 1
                end = page.get("@odata.deltaLink") if isinstance(page.get("@odata.deltaLink"), str) else None
            files = self._in_folder(items, str(folder.get("id")))
        except _Cut as exc:
            return RemoteListing([], False, str(exc))
        except LookupError as exc:
            return RemoteListing([], False, f"{exc} Nothing was removed.")
        except Exception as exc:
            what = self.describe_failure(exc)
            if pages == 0:
                return RemoteListing([], False, f"The source could not be listed ({what}): check the source's "
                                                "credential, its site_url, user or drive_id, and its folder. "
                                                "Nothing was removed.")
            return RemoteListing([], False, f"The listing stopped part-way ({what}) after {pages} page(s) of the "
                                            "drive; nothing was synced or removed. The next run lists it again.")
        if isinstance(files, str):
            return RemoteListing([], False, files)
        if len(files) > cap:
            return RemoteListing(files[:cap], False, cut_at(cap) if cap == limit else (
                f"The listing was cut at {cap} files (max_files): those were synced and nothing was removed. "
                "Name a smaller folder, or raise max_files."))
        return RemoteListing(files, True, state=self._state(end) if end else None)

    def _state(self, link: str | None) -> dict[str, Any] | None:
        if link is None:
            return None
        return {"scope": self._scope(), "drive": self.drive_id(), "delta_link": link}

    def _scope(self) -> str:
        """What a kept delta link is about: this library and folder, read by this application (a source
        repointed at another folder, or given another credential, which may see less, starts over)."""
        return f"{self.graph.app.tenant}/{self.graph.app.client_id}/{self.config.scope()}"

    def _changes(self, link: str) -> tuple[list[dict[str, Any]], str | None]:
        changes: list[dict[str, Any]] = []
        end = None
        for page in self._pages(link):
            changes += [i for i in page.get("value") or [] if isinstance(i, dict)]
            end = page.get("@odata.deltaLink") if isinstance(page.get("@odata.deltaLink"), str) else None
        return changes, end

    def _in_folder(self, items: dict[str, _Item], folder_id: str) -> list[RemoteFile] | str:
        """The files whose parents lead to the folder, with their paths from it; a file whose chain of
        parents the enumeration did not name makes the listing not whole (a string: the sentence)."""
        paths: dict[str, str | None] = {folder_id: ""}

        def path_of(item_id: str) -> str | None:
            chain: list[str] = []
            at: str | None = item_id
            while at is not None and at not in paths:
                item = items.get(at)
                if item is None or len(chain) > 400:
                    raise _Orphan
                if item.kind == "root":
                    paths[at] = None  # the drive's root, above the folder: out of scope
                    break
                chain.append(at)
                at = item.parent
            base = paths.get(at) if at is not None else None
            for link in reversed(chain):
                base = None if base is None else (base + "/" if base else "") + items[link].name
                paths[link] = base
            return paths[item_id]

        files: list[RemoteFile] = []
        try:
            for item_id, item in items.items():
                if item.kind not in ("file", "package"):
                    continue
                key = path_of(item_id)
                if key is None:
                    continue
                files.append(RemoteFile(key=key, source_path=self.address(key), size=item.size, etag=item.signal,
                                        note=PACKAGE_NOTE if item.kind == "package" else None))
        except _Orphan:
            return ("The drive's listing named a file without the folders above it; nothing was removed. The next "
                    "run lists it again.")
        files.sort(key=lambda f: f.key)
        return files

    # one download ----------------------------------------------------------------------------------------------

    def _fetch(self, file: RemoteFile, target: Path, max_bytes: int) -> None:
        with target.open("wb") as out:
            if file.size > max_bytes:
                out.truncate(max_bytes + 1)  # too large, said by the listing's size: nothing is downloaded
                return
            url = self._item_path(*file.key.split("/")) + "/content"
            self.graph.download(url, out, max_bytes)

    def describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, EndpointNotAllowed):
            return "the address is not one the deployment may reach"
        if isinstance(exc, GraphError):
            return exc.code
        return type(exc).__name__


class _Cut(Exception):
    """A listing that cannot be whole (a page ceiling, a repeated page): the sentence the run records."""


class _Orphan(Exception):
    pass
