"""``sluice ingest``'s talk with the API: sending the files (a few at a time, direct or through a
presigned POST; a 429 holds every sender for its Retry-After, a 503 INDEXING_PAUSED stops the run),
sending again those that failed earlier, and following every document to done or error. Requests go
through sluice-client (clients/python), which names each refusal by its error code."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from sluice.cli.ingest.progress import Progress
from sluice.cli.ingest.walk import Known, LocalFile

if TYPE_CHECKING:
    from sluice_client import ApiError, RateLimitExceeded

# sluice-client sends the requests (clients/python, installed by `make install`); without it the
# command says so when run, and the rest of the CLI still loads.
try:
    from sluice_client import Unreachable

    UNREACHABLE: tuple[type[Exception], ...] = (Unreachable,)
except ImportError:  # pragma: no cover - make install installs it
    UNREACHABLE = ()
# A file not sent (the API or storage did not answer, the file unreadable); following stopped.
NOT_SENT: tuple[type[Exception], ...] = (*UNREACHABLE, httpx.HTTPError, OSError)

PAGE = 200  # the documents list's largest page


class Halted(Exception):
    """The server refuses every further upload for now (kill switch, a long rate-limit wait)."""


class Refused(Exception):
    """One request answered with an error body (R-ERR-1)."""

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details or {}

    @classmethod
    def of(cls, error: ApiError) -> Refused:
        return cls(error.status, error.code, error.message, error.details)


FOLLOW_STOPPED: tuple[type[Exception], ...] = (Refused, *UNREACHABLE, httpx.HTTPError)


def _json_or_none(resp: httpx.Response) -> Any:
    return resp.json() if resp.content else None


class Api:
    """The API as the run uses it: sluice-client sends each request and names each refusal; this holds
    every sender for one shared wait on a 429 (the client itself retries nothing here)."""

    def __init__(self, client: httpx.Client, say: Callable[[str], None], *, max_wait: float,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        from sluice_client import RetryPolicy, Sluice

        self.client = Sluice(http_client=client, retry=RetryPolicy(attempts=1))
        self.say, self.max_wait, self.sleep, self.clock = say, max_wait, sleep, clock
        self._lock = threading.Lock()
        self._not_before = 0.0

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        from sluice_client import ApiError, Op, RateLimitExceeded

        op = Op(method, path, _json_or_none, **kwargs)
        while True:
            self._wait_turn()
            try:
                return self.client.send(op)
            except RateLimitExceeded as limited:
                self._hold(limited)
            except ApiError as error:
                if error.code == "INDEXING_PAUSED":
                    raise Halted(error.message or "Indexing is paused by the operator.") from None
                raise Refused.of(error) from None

    def _wait_turn(self) -> None:
        with self._lock:
            wait = self._not_before - self.clock()
        if wait > 0:
            self.sleep(wait)

    def _hold(self, limited: RateLimitExceeded) -> None:
        wait = limited.retry_after if limited.retry_after is not None else 1.0
        if wait > self.max_wait:
            raise Halted(f"{limited.message} The server asks to wait {wait:.0f} s, more than --max-wait "
                         f"({self.max_wait:.0f} s).")
        with self._lock:
            until = self.clock() + wait
            if until > self._not_before + 0.5:  # one line per wait, not one per sender
                self._not_before = until
                self.say(f"rate limited by the server: waiting {wait:.0f} s (Retry-After) before sending more")


@dataclass
class Tracked:
    file: LocalFile
    doc_id: str
    how: str  # direct, presigned, retry, present
    status: str = "processing"
    error_message: str | None = None
    chunk_count: int | None = None


@dataclass
class Outcome:
    tracked: list[Tracked] = field(default_factory=list)
    refused: list[tuple[LocalFile, str]] = field(default_factory=list)  # the upload itself was refused
    not_sent: list[LocalFile] = field(default_factory=list)
    halted: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class Sender:
    def __init__(self, api: Api, kb_id: str, fields: dict[str, Any], progress: Progress, *,
                 storage: httpx.Client, direct_limit: int) -> None:
        self.api, self.kb_id, self.fields, self.progress, self.storage = api, kb_id, fields, progress, storage
        self.direct_limit = direct_limit

    def send(self, f: LocalFile, presigned: bool) -> Tracked:
        if not presigned:
            try:
                return self._direct(f)
            except Refused as refused:
                limit = refused.details.get("limit_bytes")
                if refused.code != "FILE_TOO_LARGE" or not isinstance(limit, int) or f.size <= limit:
                    raise
                # The server's direct limit is lower than --direct-limit: this one goes presigned.
        return self._presigned(f)

    def _direct(self, f: LocalFile) -> Tracked:
        form = {k: (json.dumps(v) if isinstance(v, dict) else str(v)) for k, v in self.fields.items()}
        # In memory (at most the direct limit): a request held back by a 429 is sent again whole.
        data = f.path.read_bytes()
        body = self.api.call("POST", f"/kb/{self.kb_id}/documents", data=form, files={"file": (f.name, data)})
        return Tracked(f, str(body["id"]), "direct")

    def _presigned(self, f: LocalFile) -> Tracked:
        body = self.api.call("POST", f"/kb/{self.kb_id}/uploads",
                             json={"filename": f.name, "size": f.size, **self.fields})
        upload = body["upload"]
        try:
            with f.path.open("rb") as fh:
                # The storage POST carries the form the API signed, never the API's bearer token.
                resp = self.storage.post(upload["url"], data=upload["fields"], files={"file": (f.name, fh)})
            failed = None if resp.status_code in (200, 201, 204) else _storage_error(resp)
        except (httpx.HTTPError, OSError) as exc:
            failed = f"storage did not take the file: {exc}"
        if failed is not None:
            # Nothing half-done stays behind: the row whose object never came is removed.
            with contextlib.suppress(Refused, *UNREACHABLE, httpx.HTTPError):
                self.api.call("DELETE", f"/rag/documents/{body['id']}")
            raise Refused(0, "STORAGE", failed)
        return Tracked(f, str(body["id"]), "presigned")


def _storage_error(resp: httpx.Response) -> str:
    import re

    found = re.search(r"<Message>(.*?)</Message>", resp.text, re.S)
    return f"storage refused the file (HTTP {resp.status_code}): {found.group(1) if found else resp.text[:200]}"


def send_all(sender: Sender, files: Sequence[tuple[LocalFile, bool]], concurrency: int, outcome: Outcome) -> None:
    stop = threading.Event()
    progress = sender.progress

    def one(item: tuple[LocalFile, bool], advance: Callable[[], None]) -> None:
        f, presigned = item
        if stop.is_set():
            with outcome.lock:
                outcome.not_sent.append(f)
            return
        try:
            tracked = sender.send(f, presigned)
        except Halted as halted:
            with outcome.lock:
                first = outcome.halted is None
                outcome.halted = outcome.halted or str(halted)
                outcome.not_sent.append(f)
            stop.set()
            if first:
                progress.line(f"stopped: {halted}")
            return
        except Refused as refused:
            with outcome.lock:
                outcome.refused.append((f, refused.message))
            progress.line(f"refused   {f.shown}: {refused.message}")
        except NOT_SENT as exc:
            with outcome.lock:
                outcome.refused.append((f, f"not sent: {exc}"))
            progress.line(f"not sent  {f.shown}: {exc}")
        else:
            with outcome.lock:
                outcome.tracked.append(tracked)
            progress.line(f"sent      {f.shown} ({tracked.how})")
        advance()

    with progress.step("Uploading", len(files)) as advance, \
            ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for future in [pool.submit(one, item, advance) for item in files]:
            future.result()


def retry_all(api: Api, sender: Sender, failed: Sequence[tuple[LocalFile, Known]], outcome: Outcome) -> None:
    """Failed earlier: run the stored original again in place (POST .../retry); where none is stored,
    send the file again and remove the failed document, so the base lists the file once."""
    for f, known in failed:
        try:
            tracked = _retry_in_place(api, f, known)
            if tracked is None:
                tracked = sender.send(f, f.size > sender.direct_limit)
                with contextlib.suppress(Refused):
                    api.call("DELETE", f"/rag/documents/{known.id}")
        except Halted as halted:
            outcome.halted = outcome.halted or str(halted)
            outcome.not_sent.append(f)
            continue
        except Refused as refused:
            outcome.refused.append((f, refused.message))
            sender.progress.line(f"refused   {f.shown}: {refused.message}")
            continue
        outcome.tracked.append(tracked)
        sender.progress.line(f"sent      {f.shown} again ({tracked.how}; it failed earlier: {known.error_message})")


def _retry_in_place(api: Api, f: LocalFile, known: Known) -> Tracked | None:
    if not known.has_file:
        return None
    try:
        api.call("POST", f"/rag/documents/{known.id}/retry")
    except Refused as refused:
        if "storage_path" in (refused.details.get("fields") or {}):  # its original is gone
            return None
        raise
    return Tracked(f, known.id, "retry")


def follow(api: Api, kb_id: str, tracked: Sequence[Tracked], progress: Progress, *, timeout: float,
           poll: float = 1.0, sleep: Callable[[float], None] = time.sleep) -> None:
    """Wait until every tracked document is done or error (or ``timeout``), reading the base's list:
    a run's documents are the newest, so a page or two answers for many documents at once."""
    pending = {t.doc_id: t for t in tracked if t.status == "processing"}
    deadline = time.monotonic() + timeout
    with progress.step("Indexing", len(pending)) as advance:
        while pending:
            seen = _read_statuses(api, kb_id, set(pending))
            for doc_id in [d for d in pending if d not in seen]:
                try:
                    seen[doc_id] = api.call("GET", f"/rag/documents/{doc_id}")
                except Refused as refused:
                    if refused.status != 404:
                        raise
                    seen[doc_id] = {"status": "error", "error_message": "The document was deleted while it was "
                                                                         "being indexed.", "chunk_count": 0}
            for doc_id, doc in seen.items():
                if doc_id not in pending or doc["status"] == "processing":
                    continue
                t = pending.pop(doc_id)
                t.status, t.error_message, t.chunk_count = doc["status"], doc.get("error_message"), doc.get(
                    "chunk_count")
                if t.status == "done":
                    progress.line(f"done      {t.file.shown}: {t.chunk_count} chunk(s)")
                else:
                    progress.line(f"error     {t.file.shown}: {t.error_message}")
                advance()
            if pending and time.monotonic() >= deadline:
                progress.line(f"gave up following {len(pending)} document(s) after {timeout:.0f} s "
                              "(--timeout); they are still processing")
                return
            if pending:
                sleep(poll)


def _read_statuses(api: Api, kb_id: str, wanted: set[str]) -> dict[str, dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    offset: int | None = 0
    while offset is not None and not wanted <= set(seen):
        page = api.call("GET", f"/kb/{kb_id}/documents", params={"limit": PAGE, "offset": offset})
        for doc in page["documents"]:
            if doc["id"] in wanted:
                seen[doc["id"]] = doc
        offset = page.get("next_offset")
    return seen


def list_documents(api: Api, kb_id: str) -> list[Known]:
    found: list[Known] = []
    offset: int | None = 0
    while offset is not None:
        page = api.call("GET", f"/kb/{kb_id}/documents", params={"limit": PAGE, "offset": offset})
        found.extend(Known.from_api(d) for d in page["documents"])
        offset = page.get("next_offset")
    return found
