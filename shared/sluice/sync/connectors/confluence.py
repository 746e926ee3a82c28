"""A Confluence space's pages (R-SYNC-7), through the Confluence Cloud REST API v2.

A run asks for the space by its key (``GET /wiki/api/v2/spaces?keys=<KEY>``), then lists its
pages (``GET /wiki/api/v2/spaces/{id}/pages``) without their bodies, following the cursor of
each answer's ``Link: <...>; rel="next"`` header (or ``_links.next``). Each page carries its
``version.number``: the change signal, read before any body is fetched, so a page whose version
its document already carries is decided unchanged without a byte of it. A changed page is
fetched alone (``GET /wiki/api/v2/pages/{id}?body-format=storage``) and its storage format
written as an HTML document the pipeline reads: the title as ``<title>`` and ``<h1>``, the
page's headings, paragraphs, lists, tables and code kept, a macro's own machinery (its
parameters: a Jira query, a table of contents, an include) dropped while the text its author
wrote inside it (a panel's, an expand's, a code block's) is kept.

With ``include_attachments`` each listed page's attachments are listed too
(``GET /wiki/api/v2/pages/{id}/attachments``), each with its own version as change signal,
and a changed one fetched through its ``downloadLink``.

The credential is the source's ``atlassian_token`` secret: an Atlassian account's email and an
API token, sent as HTTP Basic only to the site's own origin. The site must be one of
Atlassian's hosts (``*.atlassian.net``, https), or a host the operator lists in
``SyncAllowedHosts`` (a test's double, a proxy); every request goes through the guarded client,
and a redirect of an attachment's download is followed only to Atlassian's media host (without
the credential) or back to the site. Throttling (``429`` with ``Retry-After``) and a server's
bad moment (5xx) are tried again through the one retry policy; a listing cut by ``max_pages``,
``SYNC_MAX_KEYS_PER_RUN`` or a failed request is not whole, and the run removes nothing.
"""

from __future__ import annotations

import html
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, NoReturn
from urllib.parse import urljoin, urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from sluice.config import SyncContextSettings
from sluice.outbound import OutboundPolicy
from sluice.parsing.text import close_raw_ends, escape_unclosed_tail
from sluice.retry import Failure, RetryPolicy
from sluice.sync.connectors.base import ConfigRefusal, Connector, RemoteFile, RemoteListing, SourceRefused
from sluice.sync.outbound import EndpointNotAllowed, guarded_client, saas_url_problem, send_retried, sync_policy

SECRET_KIND = "atlassian_token"  # noqa: S105 - the kind of secret, not one
# Confluence Cloud's sites (developer.atlassian.com: "https://<site>.atlassian.net/wiki").
DOCUMENTED_HOSTS = ("*.atlassian.net",)
# Where Confluence Cloud answers an attachment's download link with a redirect: Atlassian's media service.
MEDIA_HOSTS = ("api.media.atlassian.com",)
# A space key as Confluence issues it: letters and digits; a personal space's is "~" and an account id.
SPACE_KEY = re.compile(r"[A-Za-z0-9]{1,255}|~[A-Za-z0-9:_-]{1,128}")
_ID = re.compile(r"[0-9]{1,20}")
_ATTACHMENT_ID = re.compile(r"(att)?[0-9]{1,20}")
_PATH = re.compile(r"(/[A-Za-z0-9._~-]+)*/?")
PAGE_SIZE = 250  # the most the v2 listing endpoints answer in one page
MAX_LISTING_BYTES = 8 * 1024 * 1024  # one page of a listing: 250 entries of metadata
MAX_REDIRECTS = 3
STORAGE_OVERHEAD = 1024 * 1024  # a page's JSON around its body (escaping, metadata)

GONE = "the page or attachment was deleted, or this credential may no longer read it, after it was listed"
REFUSED = ("the credential was refused: an expired or revoked API token, or an email that is not the token's "
           "account")
FORBIDDEN = "the credential's account may not read this"


class ConfluenceConfig(BaseModel):
    """Which site and which space. Never a credential: that is secret_id."""

    model_config = ConfigDict(extra="forbid", title="Confluence space")

    base_url: str = Field(max_length=2048, description="The Confluence site: https://<site>.atlassian.net (a path "
                                                       "other than /wiki only for a host in SyncAllowedHosts).")
    space_key: str = Field(max_length=255, description="The space's key, as in /wiki/spaces/<KEY>/ (e.g. ENG).")
    include_attachments: bool = Field(False, description="Also sync the files attached to the space's pages.")
    max_pages: int = Field(5000, ge=1, le=100_000, description="The most pages and attachments one run lists.")

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("Must be the site's address, such as https://acme.atlassian.net")
        if parts.query or parts.fragment or "?" in value or "#" in value:
            raise ValueError("The site's address carries no query or fragment")
        if not _PATH.fullmatch(parts.path) or ".." in parts.path:
            raise ValueError("The site's address is a host and at most a path such as /wiki")
        return value.strip().rstrip("/")

    @field_validator("space_key")
    @classmethod
    def _space_key(cls, value: str) -> str:
        if not SPACE_KEY.fullmatch(value):
            raise ValueError("A space key is letters and digits (a personal space's: ~ and an account id)")
        return value


def wiki_root(base_url: str) -> str:
    """The site's wiki root, under which the API lives: ``https://acme.atlassian.net/wiki``."""
    parts = urlsplit(base_url)
    return base_url if parts.path not in ("", "/") else f"{parts.scheme}://{parts.netloc}/wiki"


def read_credential(secret: str) -> tuple[str, str]:
    """An atlassian_token secret: JSON ``{"email", "api_token"}`` (HTTP Basic, as Atlassian documents)."""
    try:
        value = json.loads(secret)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise SourceRefused('The source\'s atlassian_token secret is not JSON {"email": ..., "api_token": ...}.')
    email, token = value.get("email"), value.get("api_token")
    if not isinstance(email, str) or "@" not in email or any(ord(ch) < 33 for ch in email):
        raise SourceRefused("The source's atlassian_token secret holds no email of an Atlassian account.")
    if not isinstance(token, str) or not token or any(ord(ch) < 33 for ch in token):
        raise SourceRefused("The source's atlassian_token secret holds no api_token.")
    return email, token


# --- the storage format, read as HTML -----------------------------------------------------------------

# HTML a page's storage format holds that is worth keeping as itself (attributes never are).
_KEEP = frozenset({"h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "table", "thead", "tbody", "tfoot",
                   "tr", "th", "td", "pre", "code", "blockquote", "strong", "em", "b", "i", "u", "s", "sub", "sup",
                   "br", "hr", "dl", "dt", "dd"})
_VOID = frozenset({"br", "hr", "img", "col", "wbr", "input", "meta", "link", "area", "base", "source"})
# Elements whose content is never the page's prose: a macro's parameters, images, emoticons, a task's
# bookkeeping, references to other content (ri:*), placeholders, scripts, and an ADF node's fallback
# (a second copy of the content its ac:adf-content already holds).
_DROP = frozenset({"ac:parameter", "ac:placeholder", "ac:image", "ac:emoticon", "ac:task-id", "ac:task-uuid",
                   "ac:task-status", "ac:adf-attribute", "ac:adf-fallback", "script", "style", "template",
                   "noscript", "svg", "object", "iframe"})
_MACROS = frozenset({"ac:structured-macro", "ac:macro"})
# Macros whose plain-text body is text a reader sees (a code block, a no-format block).
_PLAIN_TEXT_MACROS = frozenset({"code", "noformat"})
_RENAME = {"ac:task-list": "ul", "ac:task": "li"}


class _Storage(HTMLParser):
    """A page's storage format to plain, attribute-free HTML (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.stack: list[tuple[str, str | None, bool]] = []  # (tag, what it emitted, dropping)
        self.open: dict[str, int] = {}  # how many of each tag the stack holds: a stray end tag is O(1)
        self.macros: list[str] = []

    def _dropping(self) -> bool:
        return bool(self.stack) and self.stack[-1][2]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        dropping = self._dropping()
        if not dropping:
            parent = self.stack[-1][0] if self.stack else ""
            if parent in _MACROS and tag not in ("ac:rich-text-body", "ac:plain-text-body"):
                dropping = True  # a macro's children other than its bodies: parameters and the like
            elif tag == "ac:plain-text-body":
                dropping = not self.macros or self.macros[-1] not in _PLAIN_TEXT_MACROS
            elif tag in _DROP or tag.startswith("ri:"):
                dropping = True
        if tag in _MACROS:
            self.macros.append(dict(attrs).get("ac:name") or "")
        emitted = None
        if not dropping:
            emitted = _RENAME.get(tag, tag if tag in _KEEP else None)
            if tag == "ac:plain-text-body":
                emitted = "pre"
            if emitted is not None:
                self.out.append(f"<{emitted}>")
        if tag in _VOID:
            return  # no end tag follows (or one that changes nothing)
        self.stack.append((tag, emitted, dropping))
        self.open[tag] = self.open.get(tag, 0) + 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open.get(tag):
            return  # a stray end tag
        while self.stack and self._pop() != tag:
            pass  # what the page left open inside it closes with it

    def _pop(self) -> str:
        tag, emitted, _ = self.stack.pop()
        self.open[tag] -= 1
        if emitted is not None:
            self.out.append(f"</{emitted}>")
        if tag in _MACROS and self.macros:
            self.macros.pop()
        return tag

    def handle_data(self, data: str) -> None:
        if not self._dropping():
            self.out.append(html.escape(data, quote=False))

    def unknown_decl(self, data: str) -> None:
        if data.startswith("CDATA[") and not self._dropping():
            self.out.append(html.escape(data[6:], quote=False))

    def finish(self) -> str:
        self.close()
        while self.stack:
            self._pop()  # close what the page left open
        return "".join(self.out)


def storage_to_html(title: str, storage: str) -> str:
    """A page's document: its title as ``<title>`` and ``<h1>``, then its storage format's content."""
    parser = _Storage()
    parser.feed(escape_unclosed_tail(close_raw_ends(storage)))
    body = parser.finish()
    shown = html.escape(title, quote=False)
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{shown}</title></head>\n'
            f"<body><h1>{shown}</h1>\n{body}\n</body></html>\n")


def label(text: str, fallback: str) -> str:
    """A title as one path component of a label: no separator, no control character."""
    cleaned = re.sub(r"[\\/]", "-", "".join(ch for ch in text if ord(ch) >= 32)).strip()
    return cleaned[:200] or fallback


# --- the API ----------------------------------------------------------------------------------------

class ConfluenceError(Exception):
    """A request the service refused or answered with something else; ``code`` names it (``HTTP404``)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


# Throttling and a bad moment, through the one retry loop (sluice.retry): a request gives up within
# a minute, well inside the sync function's time.
POLICY = RetryPolicy(max_attempts=5, base_delay=1.0, max_delay=20.0, total_seconds=60.0)


@dataclass
class Traffic:
    """What this connection asked and received: requests sent, response bytes read."""

    requests: int = 0
    received: int = 0


class ConfluenceApi:
    """One site's REST API v2 over the guarded client; the credential goes to the site's origin only."""

    def __init__(self, root: str, client: httpx.Client, auth: tuple[str, str], *, policy: OutboundPolicy,
                 retry: RetryPolicy | None = None) -> None:
        self.root = root.rstrip("/")
        parts = urlsplit(self.root)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self._client = client
        self._auth = httpx.BasicAuth(*auth)
        self._policy = policy
        self._retry = retry or POLICY
        self.traffic = Traffic()

    def _same_origin(self, url: str) -> bool:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}" == self.origin

    def _send(self, url: str, *, params: Mapping[str, Any] | None = None, auth: bool = True) -> httpx.Response:
        """The streamed answer to a GET of ``url`` once it is not a 429 or 5xx (tried again), else refused."""
        def send() -> httpx.Response:
            self.traffic.requests += 1
            request = self._client.build_request("GET", url, params=params, headers={"Accept": "application/json"})
            return self._client.send(request, auth=self._auth if auth else None, stream=True)

        def give_up(failure: Failure, attempts: int, detail: str) -> NoReturn:
            raise ConfluenceError(f"the site kept failing ({detail}; {attempts} tries)",
                                  str(failure.kind)) from failure.cause

        return send_retried(self._retry, send, give_up)

    def _read(self, resp: httpx.Response, limit: int, out: BinaryIO) -> int:
        """At most ``limit`` + 1 bytes of the answer written to ``out`` (how many); the rest is not read."""
        size = 0
        try:
            for chunk in resp.iter_bytes():
                take = chunk[: limit + 1 - size]
                size += len(take)
                self.traffic.received += len(take)
                out.write(take)
                if size > limit:
                    break
        finally:
            resp.close()
        return size

    @staticmethod
    def _refused(resp: httpx.Response) -> ConfluenceError:
        status = resp.status_code
        why = {401: REFUSED, 403: FORBIDDEN, 404: GONE}.get(status, "the site refused the request")
        resp.close()
        return ConfluenceError(why, f"HTTP{status}")

    def get_json(self, url: str, params: Mapping[str, Any] | None = None,
                 limit: int = MAX_LISTING_BYTES) -> tuple[dict[str, Any], httpx.Response]:
        if not self._same_origin(url):
            raise ConfluenceError("a link led away from the site", "OffSite")
        resp = self._send(url, params=params)
        if resp.status_code != 200:
            raise self._refused(resp)
        buffer = io.BytesIO()
        if self._read(resp, limit, buffer) > limit:
            raise ConfluenceError("an answer larger than a listing's bound", "TooLarge")
        try:
            value = json.loads(buffer.getvalue())
        except ValueError:
            raise ConfluenceError("the site answered something that is not JSON", "NotJson") from None
        if not isinstance(value, dict):
            raise ConfluenceError("the site answered something that is not a JSON object", "NotJson")
        return value, resp

    def pages_of(self, url: str, params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Every entry of a cursor-paged listing at ``url``: the next page is the ``Link`` header's
        ``rel="next"`` (or ``_links.next``), on the same site and path, never a page seen before."""
        path = urlsplit(url).path
        seen: set[str] = set()
        next_url: str | None = url
        first = True
        while next_url is not None:
            body, resp = self.get_json(next_url, params if first else None)
            first = False
            results = body.get("results")
            if not isinstance(results, list):
                raise ConfluenceError("a listing without results", "NotAListing")
            yield from (r for r in results if isinstance(r, dict))
            link = resp.links.get("next", {}).get("url") or (body.get("_links") or {}).get("next")
            if not link:
                return
            resolved = urljoin(self.origin + "/", str(link))
            if not self._same_origin(resolved) or urlsplit(resolved).path != path:
                raise ConfluenceError("a next link that leaves the listing", "OffSite")
            if resolved in seen:
                raise ConfluenceError("the listing repeated a page it had already sent", "RepeatedPage")
            seen.add(resolved)
            next_url = resolved

    def download(self, url: str, out: BinaryIO, limit: int) -> int:
        """An attachment's bytes, at most ``limit`` + 1; a redirect is followed to the site (with the
        credential) or to Atlassian's media host (without it), each hop checked."""
        for _ in range(MAX_REDIRECTS + 1):
            same = self._same_origin(url)
            if not same:
                problem = saas_url_problem(url, MEDIA_HOSTS + DOCUMENTED_HOSTS, self._policy)
                if problem is not None:
                    raise ConfluenceError("a download redirected to a host that is not Atlassian's", "OffSite")
            resp = self._send(url, auth=same)
            if resp.is_redirect and "location" in resp.headers:
                location = urljoin(url, resp.headers["location"])
                resp.close()
                url = location
                continue
            if resp.status_code != 200:
                raise self._refused(resp)
            return self._read(resp, limit, out)
        raise ConfluenceError("a download redirected too many times", "TooManyRedirects")


# --- the connector ------------------------------------------------------------------------------------

class ConfluenceConnector(Connector):
    CONNECTOR_TYPE = "confluence"
    TITLE = "Confluence space"
    CONFIG_MODEL = ConfluenceConfig
    SECRET_KIND: ClassVar[str | None] = SECRET_KIND
    CHANGE_SIGNAL = ("the page's version.number (and an attachment's), read from the listing before any body is "
                     "fetched")

    def __init__(self, config: ConfluenceConfig, api: ConfluenceApi) -> None:
        self.config = config
        self.api = api
        self.root = api.root
        self.key = config.space_key
        self._address = re.compile(rf"{re.escape(self.root)}/spaces/{re.escape(self.key)}/pages/([0-9]{{1,20}})"
                                   r"(?:/attachments/((?:att)?[0-9]{1,20}))?")

    @classmethod
    def check(cls, model: BaseModel, settings: SyncContextSettings) -> ConfigRefusal | None:
        assert isinstance(model, ConfluenceConfig)
        policy = sync_policy(settings)
        problem = saas_url_problem(model.base_url, DOCUMENTED_HOSTS, policy)
        if problem is None and urlsplit(model.base_url).path not in ("", "/wiki"):
            # a path of its own only on a host the operator listed (a proxy, a test's double)
            listed = saas_url_problem(model.base_url, (), policy) is None
            problem = None if listed else ("Confluence Cloud's address is https://<site>.atlassian.net (or "
                                           ".../wiki), with no other path.")
        return ConfigRefusal(problem, "base_url") if problem else None

    @classmethod
    def open(cls, config: BaseModel, credential: str | None, *, external_id: str, settings: SyncContextSettings,
             client_factory: Any, state: Mapping[str, Any]) -> ConfluenceConnector:
        assert isinstance(config, ConfluenceConfig)
        if credential is None:
            raise SourceRefused("A confluence source needs its atlassian_token secret (an email and an API token); "
                                "nothing was read.")
        policy = sync_policy(settings)
        client = guarded_client(policy, timeout=httpx.Timeout(30.0, read=120.0), max_redirects=0,
                                user_agent="sluice-sync (confluence)")
        return cls(config, ConfluenceApi(wiki_root(config.base_url), client, read_credential(credential),
                                         policy=policy))

    # addresses and labels

    def page_address(self, page_id: str) -> str:
        return f"{self.root}/spaces/{self.key}/pages/{page_id}"

    def _page(self, entry: Mapping[str, Any]) -> tuple[str, str, int] | None:
        """A listed page's id, title and version number; None when the entry lacks one of them."""
        page_id, title, version = entry.get("id"), entry.get("title"), (entry.get("version") or {}).get("number")
        if not isinstance(page_id, str) or not _ID.fullmatch(page_id) or not isinstance(version, int):
            return None
        return page_id, title if isinstance(title, str) else "", version

    # listing

    def _space_id(self) -> str:
        # The key reaches a query (keys= takes a comma-separated list): checked where the query is built.
        if not SPACE_KEY.fullmatch(self.key):
            raise ConfluenceError("a space key that is not one", "BadSpaceKey")
        body, _ = self.api.get_json(f"{self.root}/api/v2/spaces", {"keys": self.key, "limit": 1})
        for space in body.get("results") or []:
            if isinstance(space, dict) and space.get("key") == self.key and _ID.fullmatch(str(space.get("id"))):
                return str(space["id"])
        raise LookupError(f"The site has no space with the key {self.key} that this credential can read: check "
                          "space_key and the account the API token belongs to.")

    def list_files(self, limit: int | None = None) -> RemoteListing:
        ceiling = min(limit or self.config.max_pages, self.config.max_pages)
        files: list[RemoteFile] = []
        try:
            space_id = self._space_id()
            pages = self.api.pages_of(f"{self.root}/api/v2/spaces/{space_id}/pages",
                                      {"limit": PAGE_SIZE, "status": "current"})
            for entry in pages:
                page = self._page(entry)
                if page is None:
                    return RemoteListing(files, False, "The site listed a page without an id or a version; nothing "
                                                       "was removed.")
                if len(files) >= ceiling:
                    return RemoteListing(files, False, self._cut(ceiling))
                page_id, title, version = page
                name = label(title, f"page-{page_id}")
                files.append(RemoteFile(key=f"{self.key}/{name}.html", source_path=self.page_address(page_id),
                                        size=0, etag=f"v{version}"))
                if self.config.include_attachments:
                    cut = self._attachments(page_id, name, files, ceiling)
                    if cut is not None:
                        return cut
        except LookupError as exc:
            return RemoteListing(files, False, f"{exc} Nothing was removed.")
        except Exception as exc:
            what = self.describe_failure(exc)
            if not files:
                return RemoteListing([], False, f"The space could not be listed ({what}): check the source's "
                                                "base_url, space_key and credential. Nothing was removed.")
            return RemoteListing(files, False, f"The listing stopped part-way ({what}) after {len(files)} file(s); "
                                               "those were synced and nothing was removed.")
        return RemoteListing(files, True)

    def _attachments(self, page_id: str, page_name: str, files: list[RemoteFile], ceiling: int
                     ) -> RemoteListing | None:
        for att in self.api.pages_of(f"{self.root}/api/v2/pages/{page_id}/attachments", {"limit": PAGE_SIZE}):
            att_id, title = att.get("id"), att.get("title")
            version, size = (att.get("version") or {}).get("number"), att.get("fileSize")
            if not isinstance(att_id, str) or not _ATTACHMENT_ID.fullmatch(att_id) or not isinstance(version, int):
                return RemoteListing(files, False, "The site listed an attachment without an id or a version; "
                                                   "nothing was removed.")
            if len(files) >= ceiling:
                return RemoteListing(files, False, self._cut(ceiling))
            name = label(title if isinstance(title, str) else "", f"attachment-{att_id}")
            files.append(RemoteFile(key=f"{self.key}/{page_name}/{name}",
                                    source_path=f"{self.page_address(page_id)}/attachments/{att_id}",
                                    size=size if isinstance(size, int) and size >= 0 else 0, etag=f"v{version}"))
        return None

    @staticmethod
    def _cut(ceiling: int) -> str:
        return (f"The listing was cut at {ceiling} files (max_pages, or SYNC_MAX_KEYS_PER_RUN): those were synced "
                "and nothing was removed. Raise max_pages, or split the space into several sources.")

    # fetching

    def _fetch(self, file: RemoteFile, target: Path, max_bytes: int) -> None:
        match = self._address.fullmatch(file.source_path)
        if match is None:
            raise SourceRefused("The file's address is not a page of this source's space.")
        page_id, att_id = match.group(1), match.group(2)
        if att_id is None:
            self._fetch_page(page_id, target, max_bytes)
        else:
            self._fetch_attachment(att_id, target, max_bytes)

    def _fetch_page(self, page_id: str, target: Path, max_bytes: int) -> None:
        bound = 2 * max_bytes + STORAGE_OVERHEAD
        try:
            body, _ = self.api.get_json(f"{self.root}/api/v2/pages/{page_id}", {"body-format": "storage"}, bound)
        except ConfluenceError as exc:
            if exc.code != "TooLarge":
                raise
            body = None
        with target.open("wb") as out:
            if body is None:
                out.truncate(max_bytes + 1)  # one byte more than allowed: "too large", nothing of it held
                return
            storage = ((body.get("body") or {}).get("storage") or {}).get("value")
            title = body.get("title")
            if not isinstance(storage, str):
                raise ConfluenceError("the page came without its storage format", "NoBody")
            data = storage_to_html(title if isinstance(title, str) else "", storage).encode("utf-8")
            if len(data) > max_bytes:
                out.truncate(max_bytes + 1)
                return
            out.write(data)

    def _fetch_attachment(self, att_id: str, target: Path, max_bytes: int) -> None:
        meta, _ = self.api.get_json(f"{self.root}/api/v2/attachments/{att_id}")
        link = meta.get("downloadLink")
        if not isinstance(link, str) or not link.startswith("/") or link.startswith("//"):
            raise ConfluenceError("the attachment came without a download link on the site", "NoDownloadLink")
        with target.open("wb") as out:
            self.api.download(self.root + link, out, max_bytes)

    def describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, EndpointNotAllowed):
            return "the address is not one the deployment may reach"
        if isinstance(exc, ConfluenceError):
            return f"{exc.code}: {exc}"
        return type(exc).__name__
