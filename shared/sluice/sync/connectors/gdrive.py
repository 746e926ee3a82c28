"""A Google Drive folder, or a whole shared drive, as a source (R-SYNC-7), through the Drive API v3.

The listing is ``files.list`` on one folder at a time (``'<folderId>' in parents and trashed =
false``), page after page (``pageToken``), into every sub-folder unless ``recursive`` is off. A
folder in a shared drive is listed with ``supportsAllDrives`` and ``includeItemsFromAllDrives``;
with ``drive_id`` the query keeps to that drive (``corpora=drive``), without it it asks every drive
the service account can see (``corpora=allDrives``), and an answer Google marks
``incompleteSearch`` is a listing that is not whole.

The change signal, read from the listing before any byte is fetched: a binary file's
``md5Checksum`` (checked again against the bytes downloaded, so a file replaced between the listing
and the download is refused rather than hashed under the old signal); a Google Doc's, Sheet's or
Slides deck's ``version``. Those three are exported (``files.export``) to .docx, .xlsx and .pptx
and read as those files are: Google exports at most 10 MB of one, and a larger one is reported in
words. Other Google-native files (Forms, Drawings, Sites, ...) and shortcuts are reported, not
followed: a shortcut points anywhere its owner can reach, which is not what the source was
pointed at. A file's address is ``gdrive://<fileId>``; its key, a label, is its folder path and
name (a Doc named ``Plan`` is ``Plan.docx``).

A folder id reaches Drive's query language, which wraps it in single quotes, so
``x' in parents or name contains 'salary`` would be a well-formed, wider query (seed 000). Every
id is checked against what Google issues - letters, digits, ``-`` and ``_`` - where the query is
built (:func:`children_query`), the one funnel the configured folder and every sub-folder id pass
through; the config's rules ask the same question, so a hostile value is refused by the route
that was sent it.

The credential is the source's ``gcp_service_account`` secret (a service account's JSON key, read
as the gcs connector reads it), exchanged at Google's token endpoint for a read-only Drive token
(the OAuth 2.0 JWT-bearer grant), refreshed once when the API answers 401. Every request goes
through the guarded client to the documented hosts (``www.googleapis.com``,
``oauth2.googleapis.com``) or to hosts the operator lists in ``SyncAllowedHosts`` (a test's
double); no redirect is followed. Throttling (``429``, ``403 rateLimitExceeded``) and 5xx go
through ``sluice.retry``, ``Retry-After`` honoured.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ClassVar, NoReturn

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from sluice.config import SyncContextSettings
from sluice.retry import Failure, RetryPolicy, Try, call, parse_retry_after
from sluice.sync.connectors.base import ConfigRefusal, Connector, RemoteFile, RemoteListing, SourceRefused
from sluice.sync.connectors.gcs import SECRET_KIND, read_key
from sluice.sync.outbound import Busy, EndpointNotAllowed, guarded_client, retry_failure, saas_url_problem, sync_policy

API = "https://www.googleapis.com"
DOCUMENTED_HOSTS = ("www.googleapis.com",)
READ_ONLY = "https://www.googleapis.com/auth/drive.readonly"
FOLDER = "application/vnd.google-apps.folder"
SHORTCUT = "application/vnd.google-apps.shortcut"
NATIVE = "application/vnd.google-apps."
# Google-native kind -> the Office format it is exported to, and that format's extension.
EXPORTS: dict[str, tuple[str, str]] = {
    "application/vnd.google-apps.document":
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"),
    "application/vnd.google-apps.spreadsheet":
        ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"),
    "application/vnd.google-apps.presentation":
        ("application/vnd.openxmlformats-officedocument.presentationml.presentation", "pptx"),
}
_BY_EXTENSION = {ext: mime for mime, ext in EXPORTS.values()}
EXPORT_LIMIT = 10 * 1024 * 1024  # files.export: "the exported content is limited to 10 MB"
# What Google issues as a file, folder or shared drive id: letters, digits, '-' and '_'.
_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_MD5 = re.compile(r"[0-9a-f]{32}")
_EXPORTED = re.compile(r"export:(docx|xlsx|pptx):(.+)")
RATE_LIMITED = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
MAX_JSON = 16 * 1024 * 1024
FIELDS = ("nextPageToken,incompleteSearch,"
          "files(id,name,mimeType,md5Checksum,version,size,shortcutDetails(targetId,targetMimeType))")

SHORTCUT_NOTE = ("A Drive shortcut: shortcuts are not followed (they point outside what the source names); add "
                 "the folder that holds its target as a source to sync it.")
ID_NOTE = "The file's id is not one Google issues (letters, digits, - and _); it was not fetched."
ID_SENTENCE = "A Drive id is 1-128 letters, digits, '-' and '_', as Google issues them"


def native_note(mime: str) -> str:
    kind = mime.removeprefix(NATIVE)
    return (f"A Google {kind} file: only Docs, Sheets and Slides are exported (to .docx, .xlsx and .pptx); "
            "it was not synced.")


class DriveIdRefused(ValueError):
    """An id that is not one Google issues, refused before it reaches a query or a URL."""


def checked_id(value: str) -> str:
    """``value`` when it is an id Google could have issued; else refused (it would reach a query or a URL)."""
    if not _ID.fullmatch(value):
        raise DriveIdRefused(f"{ID_SENTENCE}; this one is not, and it was not sent to Google.")
    return value


def children_query(folder_id: str) -> str:
    """The ``q`` of one folder's listing: the one place a folder id meets Drive's query language."""
    return f"'{checked_id(folder_id)}' in parents and trashed = false"


class GdriveConfig(BaseModel):
    """Which folder or shared drive. Never a credential: that is the source's secret_id."""

    model_config = ConfigDict(extra="forbid", title="Google Drive folder or shared drive")

    folder_id: str | None = Field(None, max_length=128, description=(
        "The folder's id, the last part of its address (drive.google.com/drive/folders/<id>). Share the folder "
        "with the service account's client_email."))
    drive_id: str | None = Field(None, max_length=128, description=(
        "A shared drive's id: alone, the whole shared drive; with folder_id, the shared drive that holds the folder "
        "(the listing then keeps to that drive)."))
    recursive: bool = Field(True, description="Sync the folder's sub-folders too.")
    max_files: int = Field(5000, ge=1, le=100_000, description="The most files one run lists.")
    endpoint: str | None = Field(None, max_length=512, description=(
        "The Drive API's base URL, when it is not https://www.googleapis.com: only a host the operator lists in "
        "SyncAllowedHosts."))

    @field_validator("folder_id", "drive_id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is not None:
            checked_id(value)
        return value


class DriveError(Exception):
    """The Drive API (or its token endpoint) answered something other than success; ``code`` names it."""

    def __init__(self, status: int, reason: str | None, what: str) -> None:
        super().__init__(what)
        self.status, self.reason = status, reason

    @property
    def code(self) -> str:
        """``HTTP 404 notFound``; a request that never got an answer names its failure alone."""
        parts = ([f"HTTP {self.status}"] if self.status else []) + ([self.reason] if self.reason else [])
        return " ".join(parts) or "DriveError"


# Throttling and a server's bad moment, through the one retry loop; a request gives up within 90 s,
# well inside the sync function's time.
POLICY = RetryPolicy(max_attempts=5, base_delay=1.0, max_delay=30.0, total_seconds=90.0)


@dataclass
class Traffic:
    """What one connection asked: each request's kind, the retry loop's waits, the token renewals."""

    kinds: list[str] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    token_refreshes: int = 0


def _error_reason(resp: httpx.Response) -> str | None:
    """The reason a Google error body gives (``error.errors[0].reason``, or OAuth's ``error``), read bounded."""
    try:
        raw = b""
        for chunk in resp.iter_bytes():
            raw += chunk
            if len(raw) > 65536:
                return None
        body = json.loads(raw or b"null")
    except (ValueError, httpx.HTTPError):
        return None
    finally:
        resp.close()
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str):
        return error[:64]  # the token endpoint: {"error": "invalid_grant", ...}
    if isinstance(error, dict):
        errors = error.get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict) and errors[0].get("reason"):
            return str(errors[0]["reason"])[:64]
        if error.get("status"):
            return str(error["status"])[:64]
    return None


class DriveApi:
    """The Drive API v3 at ``base`` and a service account's token, over the guarded client."""

    def __init__(self, base: str, key: Mapping[str, Any], client: httpx.Client, *, policy: RetryPolicy | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        from google.auth import crypt

        self.base = base.rstrip("/")
        self._client = client
        self._policy = policy or POLICY
        self._clock = clock
        self._email = str(key["client_email"])
        self._token_uri = str(key["token_uri"])
        try:
            self._signer = crypt.RSASigner.from_service_account_info(dict(key))  # type: ignore[no-untyped-call]
        except (ValueError, KeyError, TypeError) as exc:
            raise SourceRefused("The source's service account key could not be read (its private_key is not a "
                                "PEM key).") from exc
        self._token: str | None = None
        self._expires = 0.0
        self.traffic = Traffic()

    # --- the token ---------------------------------------------------------------------------------

    def _assertion(self) -> str:
        from google.auth import jwt

        now = int(self._clock())
        claims = {"iss": self._email, "scope": READ_ONLY, "aud": self._token_uri, "iat": now, "exp": now + 3600}
        encoded: bytes = jwt.encode(self._signer, claims)  # type: ignore[no-untyped-call]
        return encoded.decode()

    def _bearer(self, *, renew: bool = False) -> str:
        if renew or self._token is None or self._clock() >= self._expires:
            resp = self._send("token", lambda: self._client.build_request("POST", self._token_uri, data={
                "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": self._assertion()}),
                authorized=False)
            body = self._json(resp)
            token, ttl = body.get("access_token"), body.get("expires_in", 3600)
            if not isinstance(token, str) or not token:
                raise DriveError(200, "NoAccessToken", "Google's token endpoint answered without an access token")
            self._token = token
            self._expires = self._clock() + max(0.0, float(ttl) - 60)
        return self._token

    # --- one request, retried ------------------------------------------------------------------------

    def _send(self, kind: str, build: Callable[[], httpx.Request], *, authorized: bool = True) -> httpx.Response:
        """The request ``build`` makes, sent (streamed) until it answers 200, or refused in words."""
        def send(_: Try) -> httpx.Response:
            renewed = False
            while True:
                request = build()
                if authorized:
                    request.headers["Authorization"] = f"Bearer {self._bearer(renew=renewed)}"
                self.traffic.kinds.append(kind)
                resp = self._client.send(request, stream=True)
                if resp.status_code == 401 and authorized and not renewed:
                    resp.close()  # an expired or revoked token: one new one, then the request again
                    self.traffic.token_refreshes += 1
                    renewed = True
                    continue
                break
            if resp.status_code == 200:
                return resp
            status = resp.status_code
            retry_after = parse_retry_after(resp.headers)
            reason = _error_reason(resp)
            if status == 429 or status >= 500 or (status == 403 and reason in RATE_LIMITED):
                raise Busy(status, retry_after, reason)
            raise DriveError(status, reason, f"Google answered HTTP {status}")

        def give_up(failure: Failure, attempts: int, detail: str) -> NoReturn:
            cause = failure.cause
            if isinstance(cause, Busy):
                raise DriveError(cause.status, cause.reason,
                                 f"Google kept refusing ({detail}; {attempts} tries)") from cause
            raise DriveError(0, str(failure.kind), f"the request kept failing ({detail}; {attempts} tries)") \
                from cause

        def waited(failure: Failure, attempt: int, wait: float) -> None:
            self.traffic.waits.append(wait)

        return call(self._policy, send, retry_failure, give_up, on_retry=waited)

    @staticmethod
    def _json(resp: httpx.Response) -> dict[str, Any]:
        try:
            raw = bytearray()
            for chunk in resp.iter_bytes():
                raw += chunk
                if len(raw) > MAX_JSON:
                    raise DriveError(200, "TooLarge", "an answer larger than a listing page can be")
        finally:
            resp.close()
        try:
            body = json.loads(bytes(raw))
        except ValueError:
            raise DriveError(200, "NotJson", "an answer that is not JSON") from None
        if not isinstance(body, dict):
            raise DriveError(200, "NotJson", "an answer that is not a JSON object")
        return body

    # --- what the connector asks -----------------------------------------------------------------------

    def list_children(self, folder_id: str, page_token: str | None, *, drive_id: str | None,
                      page_size: int) -> dict[str, Any]:
        """One page of ``files.list`` over the folder's children (not trashed)."""
        params: dict[str, str | int] = {
            "q": children_query(folder_id), "fields": FIELDS, "pageSize": page_size,
            "supportsAllDrives": "true", "includeItemsFromAllDrives": "true",
            "corpora": "drive" if drive_id else "allDrives"}
        if drive_id:
            params["driveId"] = checked_id(drive_id)
        if page_token:
            params["pageToken"] = page_token
        return self._json(self._send("list", lambda: self._client.build_request(
            "GET", f"{self.base}/drive/v3/files", params=params)))

    def download(self, file_id: str, out: IO[bytes], max_bytes: int, *, export_mime: str | None = None) -> int:
        """The file's bytes (``files.get alt=media``, or ``files.export`` to ``export_mime``) into ``out``, at
        most ``max_bytes`` + 1 of them; answers how many were written."""
        path = f"{self.base}/drive/v3/files/{checked_id(file_id)}"
        if export_mime is None:
            kind, url, params = "download", path, {"alt": "media", "supportsAllDrives": "true"}
        else:
            kind, url, params = "export", f"{path}/export", {"mimeType": export_mime}
        resp = self._send(kind, lambda: self._client.build_request("GET", url, params=params))
        written = 0
        try:
            for chunk in resp.iter_bytes():
                take = chunk[:max_bytes + 1 - written]
                out.write(take)
                written += len(take)
                if written > max_bytes:
                    break  # one byte over says "too large"; the rest is not read
        finally:
            resp.close()
        return written


def _key(prefix: str, name: str, extension: str | None = None) -> str:
    if extension and not name.lower().endswith(f".{extension}"):
        name = f"{name}.{extension}"
    return prefix + name


class GdriveConnector(Connector):
    CONNECTOR_TYPE = "gdrive"
    TITLE = "Google Drive folder or shared drive"
    CONFIG_MODEL = GdriveConfig
    SECRET_KIND: ClassVar[str | None] = SECRET_KIND
    CHANGE_SIGNAL = ("a binary file's md5Checksum (checked against the bytes downloaded); a Google Doc's, Sheet's or "
                     "Slides deck's version, read from the listing before anything is fetched or exported")
    PAGE_SIZE: ClassVar[int] = 1000

    def __init__(self, config: GdriveConfig, api: DriveApi) -> None:
        self.config = config
        self.api = api

    @classmethod
    def check(cls, model: BaseModel, settings: SyncContextSettings) -> ConfigRefusal | None:
        assert isinstance(model, GdriveConfig)
        if model.folder_id is None and model.drive_id is None:
            return ConfigRefusal("Name the folder to sync (folder_id), a shared drive (drive_id), or both.",
                                 "folder_id")
        if model.endpoint is not None:
            problem = saas_url_problem(model.endpoint, DOCUMENTED_HOSTS, sync_policy(settings))
            if problem:
                return ConfigRefusal(problem, "endpoint")
        return None

    @classmethod
    def open(cls, config: BaseModel, credential: str | None, *, external_id: str, settings: SyncContextSettings,
             client_factory: Any, state: Mapping[str, Any]) -> GdriveConnector:
        assert isinstance(config, GdriveConfig)
        if credential is None:
            raise SourceRefused("A gdrive source needs its gcp_service_account secret (a service account's JSON "
                                "key); the deployment has no Google credential of its own.")
        key = read_key(credential, settings)
        client = guarded_client(sync_policy(settings), timeout=httpx.Timeout(30.0, read=120.0), max_redirects=0,
                                user_agent="sluice-sync (gdrive)")
        return cls(config, DriveApi(config.endpoint or API, key, client))

    @classmethod
    def content_id(cls, etag: str | None) -> str | None:
        return etag if etag is not None and _MD5.fullmatch(etag) else None  # md5Checksum; a version is not

    def address(self, file_id: str) -> str:
        return f"gdrive://{file_id}"

    def list_files(self, limit: int | None = None) -> RemoteListing:
        cap = min(limit or self.config.max_files, self.config.max_files)
        root = self.config.folder_id or self.config.drive_id
        assert root is not None  # check() refused a config naming neither
        files: list[RemoteFile] = []
        listed: set[str] = set()
        folders: deque[tuple[str, str]] = deque([(root, "")])
        visited = {root}
        while folders:
            folder, prefix = folders.popleft()
            token: str | None = None
            tokens: set[str] = set()
            while True:
                try:
                    page = self.api.list_children(folder, token, drive_id=self.config.drive_id,
                                                  page_size=self.PAGE_SIZE)
                except Exception as exc:
                    return RemoteListing(files, False, self._stopped(exc, len(files)))
                for item in page.get("files") or []:
                    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                        continue
                    if item.get("mimeType") == FOLDER:
                        if self.config.recursive and item["id"] not in visited:
                            visited.add(item["id"])
                            name = str(item.get("name") or item["id"]).replace("\x00", "")
                            folders.append((item["id"], f"{prefix}{name}/"))
                        continue
                    if item["id"] in listed:
                        continue
                    if len(files) >= cap:
                        return RemoteListing(files, False, (
                            f"The listing was cut at {cap} files (max_files, or SYNC_MAX_KEYS_PER_RUN): those were "
                            "synced and nothing was removed. Point folder_id at a narrower folder, or split it into "
                            "several sources."))
                    listed.add(item["id"])
                    files.append(self._entry(item, prefix))
                if page.get("incompleteSearch"):
                    return RemoteListing(files, False, (
                        "Google said its answer was incomplete (incompleteSearch: it did not search every shared "
                        "drive); name the shared drive in drive_id. Nothing was removed."))
                token = page.get("nextPageToken") or None
                if token is None:
                    break
                if token in tokens:
                    return RemoteListing(files, False, "The listing repeated a page it had already sent; nothing "
                                                       "was removed.")
                tokens.add(token)
        files.sort(key=lambda f: f.key)
        return RemoteListing(files, True)

    def _entry(self, item: Mapping[str, Any], prefix: str) -> RemoteFile:
        file_id, mime = str(item["id"]), str(item.get("mimeType") or "")
        name = str(item.get("name") or file_id).replace("\x00", "")  # a label; no database takes a NUL
        version = str(item.get("version") or "")
        if not _ID.fullmatch(file_id):
            odd = hashlib.sha256(file_id.encode(errors="replace")).hexdigest()[:24]
            return RemoteFile(_key(prefix, name), self.address(f"not-an-id-{odd}"), 0, None, note=ID_NOTE)
        if mime == SHORTCUT:
            target = (item.get("shortcutDetails") or {}).get("targetId")
            return RemoteFile(_key(prefix, name), self.address(file_id), 0, f"shortcut:{target}",
                              note=SHORTCUT_NOTE)
        if mime in EXPORTS:
            ext = EXPORTS[mime][1]
            return RemoteFile(_key(prefix, name, ext), self.address(file_id), 0, f"export:{ext}:{version}")
        if mime.startswith(NATIVE):
            return RemoteFile(_key(prefix, name), self.address(file_id), 0, f"native:{version}",
                              note=native_note(mime))
        md5 = str(item.get("md5Checksum") or "")
        try:
            size = int(item.get("size") or 0)
        except (TypeError, ValueError):
            size = 0
        return RemoteFile(_key(prefix, name), self.address(file_id), size, md5 or (f"v{version}" if version else None))

    def _stopped(self, exc: BaseException, listed: int) -> str:
        what = self.describe_failure(exc)
        if listed == 0:
            return (f"The folder could not be listed ({what}): check the source's folder_id and drive_id, and that "
                    "the folder is shared with the service account's client_email. Nothing was removed.")
        return (f"The listing stopped part-way ({what}) after {listed} file(s); those were synced and nothing was "
                "removed.")

    def _fetch(self, file: RemoteFile, target: Path, max_bytes: int) -> None:
        file_id = checked_id(file.source_path.removeprefix("gdrive://"))
        exported = _EXPORTED.fullmatch(file.etag or "")
        with target.open("wb") as out:
            if exported is not None:
                # Google refuses an export past EXPORT_LIMIT itself (403 exportSizeLimitExceeded)
                self.api.download(file_id, out, max_bytes, export_mime=_BY_EXTENSION[exported.group(1)])
                return
            if file.size > max_bytes:
                out.truncate(max_bytes + 1)  # too large, said by the listing's size: nothing is downloaded
                return
            written = self.api.download(file_id, out, max_bytes)
        if written <= max_bytes and file.etag and _MD5.fullmatch(file.etag):
            digest = hashlib.md5(target.read_bytes(), usedforsecurity=False).hexdigest()
            if digest != file.etag:
                raise DriveError(412, "PreconditionFailed", "the bytes are not the listed md5Checksum's")

    def describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, DriveError):
            if exc.reason == "PreconditionFailed":
                return "PreconditionFailed"  # the run says the file changed while it was read
            if exc.reason == "exportSizeLimitExceeded":
                return ("exportSizeLimitExceeded: Google exports at most 10 MB of a Doc, Sheet or Slides deck, and "
                        "this one is larger")
            if exc.status == 404:
                return f"{exc.code}: deleted, or no longer shared with the service account"
            if exc.status in (401, 403) and exc.reason not in RATE_LIMITED:
                return f"{exc.code}: the service account may not read it"
            return exc.code
        if isinstance(exc, DriveIdRefused):
            return "an id Google would not issue"
        if isinstance(exc, EndpointNotAllowed):
            return "the address is not one the deployment may reach"
        return type(exc).__name__
