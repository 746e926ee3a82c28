"""``sluice ingest PATH --kb ID``: send a file or a folder to a running API and follow it (R-OPS-2).

The API is the local runtime by default (``sluice local up``, with a token minted
from its data directory's secret as ``sluice local token`` does) or any
deployment (``--api URL --token T``, or ``SLUICE_API_URL``/``SLUICE_TOKEN``).

A run has three steps:

1. **Plan** (pure, see ``plan``): walk PATH (hidden files and folders are
   skipped, so are extensions the base does not index and empty files, each
   with its reason), hash each file (sha256, the ``content_hash`` the documents
   API lists), and leave out every file whose content the base already holds:
   such a document is followed, not sent again. Files up to the direct limit
   go in the request (POST /kb/{id}/documents); larger ones through a
   presigned POST straight to storage (POST /kb/{id}/uploads). Requests go through
   sluice-client (clients/python), which names each refusal by its error code.
2. **Send**, a few at a time (``--concurrency``). A 429 holds every sender for
   its Retry-After; a 503 INDEXING_PAUSED (the operator's kill switch) stops
   the run with the server's sentence and the count of files not sent.
3. **Follow** every document to ``done`` or ``error`` with a progress bar
   (plain lines when the output is not a terminal), then print the summary and
   a table of failures with their reasons. The exit status is 1 when any
   document failed, was not sent or is still processing at ``--timeout``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO
from urllib.parse import urlsplit

import httpx

from sluice.cli.http import api_transport

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

LOCAL_API = "http://127.0.0.1:8787"
# The server's default (DIRECT_UPLOAD_MAX_MB): API Gateway takes at most 10 MB in a request.
DEFAULT_DIRECT_LIMIT = 4 * 1024 * 1024
PAGE = 200  # the documents list's largest page
DESCRIPTION = (
    "Upload a file or a folder (recursively; hidden files are skipped) to a knowledge base of a running API, "
    "follow every document to done or error, and print the failures with their reasons. Files whose content "
    "the base already holds (same sha256) are not sent again. Exits 1 when any document failed or was not sent."
)
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_HASH_BLOCK = 1024 * 1024
# Preferred when one content is in the base more than once: the copy that says the most.
_STATUS_RANK = {"done": 0, "processing": 1, "error": 2}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("ingest", help="upload a file or a folder to a knowledge base and follow it to done",
                       description=DESCRIPTION)
    p.add_argument("path", help="a file, or a folder (read recursively; hidden files are skipped)")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--kb", help="the knowledge base's id")
    target.add_argument("--collection", help="a collection name, when one knowledge base holds it")
    p.add_argument("--api", default=os.environ.get("SLUICE_API_URL") or LOCAL_API,
                   help=f"the API's base URL (default: SLUICE_API_URL, else the local runtime at {LOCAL_API})")
    p.add_argument("--token", default=os.environ.get("SLUICE_TOKEN"),
                   help="bearer token (default: SLUICE_TOKEN; against a local API, one is minted as "
                        "`sluice local token` does)")
    p.add_argument("--user", default=os.environ.get("SLUICE_USER"),
                   help="local API without --token: the user to mint the token for (default: SLUICE_USER, "
                        "else your login name)")
    p.add_argument("--org", help="local API without --token: the user's organization")
    p.add_argument("--perm", action="append", help="local API without --token: a permission (repeatable)")
    p.add_argument("--data-dir", default=None, help="local API without --token: the data directory of "
                                                    "`sluice local up` whose secret signs the token (.sluice/)")
    p.add_argument("--concurrency", type=int, default=4, help="files sent at the same time (default 4)")
    p.add_argument("--direct-limit", type=int, default=DEFAULT_DIRECT_LIMIT, metavar="BYTES",
                   help="files up to this size go in the request, larger ones through a presigned POST "
                        f"(default {DEFAULT_DIRECT_LIMIT}, the server's default)")
    p.add_argument("--retry-failed", action="store_true",
                   help="send again files whose document failed earlier (by default they are reported)")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds to follow the documents before giving up on them (default 3600)")
    p.add_argument("--no-follow", action="store_true", help="send the files and stop: do not wait for indexing")
    p.add_argument("--max-wait", type=float, default=300,
                   help="the longest Retry-After to wait out; a longer one stops the run (default 300 s)")
    p.add_argument("--unit", dest="organizational_unit", help="organizational unit of every file")
    p.add_argument("--document-type", help="document type of every file")
    p.add_argument("--document-date", help="YYYY-MM-DD, of every file")
    p.add_argument("--ingestion", help='chunking settings for these files, a JSON object: {"chunk_size": 400}')
    p.set_defaults(func=run)


# --- planning (no network) -------------------------------------------------------------------

@dataclass(frozen=True)
class LocalFile:
    path: Path
    shown: str  # the path as the user reads it in the output: relative to the folder given
    size: int
    sha256: str

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Skipped:
    shown: str
    reason: str


@dataclass(frozen=True)
class Known:
    """A document the base already holds, as the documents list shows it."""

    id: str
    filename: str
    filesize: int | None
    status: str
    content_hash: str | None
    error_message: str | None
    has_file: bool

    @classmethod
    def from_api(cls, doc: dict[str, Any]) -> Known:
        return cls(id=str(doc["id"]), filename=str(doc["filename"]), filesize=doc.get("filesize"),
                   status=str(doc["status"]), content_hash=doc.get("content_hash"),
                   error_message=doc.get("error_message"), has_file=bool(doc.get("has_file")))


@dataclass
class Plan:
    direct: list[LocalFile] = field(default_factory=list)
    presigned: list[LocalFile] = field(default_factory=list)
    # Content the base holds already: followed (if still processing) and counted, never sent.
    present: list[tuple[LocalFile, Known]] = field(default_factory=list)
    # Content whose document failed earlier: sent again with --retry-failed, else reported.
    failed_before: list[tuple[LocalFile, Known]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def to_send(self) -> list[LocalFile]:
        return self.direct + self.presigned


def is_supported(name: str, extensions: Sequence[str]) -> bool:
    lowered = name.lower()
    return any(lowered.endswith(ext.lower()) for ext in extensions)


def _extension(name: str) -> str:
    suffixes = Path(name).suffixes
    return "".join(suffixes[-2:]) if suffixes[-2:-1] == [".tar"] else (suffixes[-1] if suffixes else "")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def collect(root: Path, extensions: Sequence[str]) -> tuple[list[LocalFile], list[Skipped]]:
    """The files under ``root`` a knowledge base may take, and what was left out and why.

    A file named on the command line is taken even if its name starts with a dot;
    inside a folder, hidden files and hidden folders are skipped (a hidden folder
    is reported once, not file by file), and symbolic links to folders are not
    followed (a link may point back up the tree).
    """
    if root.is_file():
        candidates = [(root, root.name)]
        skipped: list[Skipped] = []
    elif root.is_dir():
        candidates, skipped = _walk(root)
    else:
        raise FileNotFoundError(f"{root}: no such file or folder")
    files: list[LocalFile] = []
    for path, shown in candidates:
        if not is_supported(path.name, extensions):
            ext = _extension(path.name)
            reason = f"unsupported extension ({ext})" if ext else "no extension"
            skipped.append(Skipped(shown, reason + ": a knowledge base does not index it"))
            continue
        try:
            size = path.stat().st_size
            if size == 0:
                skipped.append(Skipped(shown, "empty file"))
                continue
            files.append(LocalFile(path, shown, size, sha256_of(path)))
        except OSError as exc:
            skipped.append(Skipped(shown, f"unreadable: {exc.strerror or exc}"))
    return files, skipped


def _walk(root: Path) -> tuple[list[tuple[Path, str]], list[Skipped]]:
    found: list[tuple[Path, str]] = []
    skipped: list[Skipped] = []
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(folder)
        for name in sorted(dirnames):
            shown = (here / name).relative_to(root).as_posix()
            if name.startswith("."):
                skipped.append(Skipped(shown + "/", "hidden folder"))
            elif (here / name).is_symlink():
                skipped.append(Skipped(shown + "/", "symbolic link to a folder: not followed"))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (here / d).is_symlink())
        for name in sorted(filenames):
            path = here / name
            shown = path.relative_to(root).as_posix()
            if name.startswith("."):
                skipped.append(Skipped(shown, "hidden file"))
            elif not path.is_file():
                skipped.append(Skipped(shown, "not a regular file"))
            else:
                found.append((path, shown))
    return found, skipped


def index_known(documents: Sequence[Known]) -> tuple[dict[str, Known], dict[tuple[str, int | None], Known]]:
    """The base's documents by content hash, and those not read yet (no hash) by name and size."""
    by_hash: dict[str, Known] = {}
    unread: dict[tuple[str, int | None], Known] = {}
    for doc in documents:
        if doc.content_hash:
            held = by_hash.get(doc.content_hash)
            if held is None or _STATUS_RANK.get(doc.status, 3) < _STATUS_RANK.get(held.status, 3):
                by_hash[doc.content_hash] = doc
        elif doc.status == "processing":
            # Queued, not parsed yet: the hash comes with the parse stage. Name and size stand in,
            # so a run started again while the last one's files wait in the queue sends none twice.
            unread.setdefault((doc.filename, doc.filesize), doc)
    return by_hash, unread


def plan(files: Sequence[LocalFile], documents: Sequence[Known], *, direct_limit: int,
         display_name: Callable[[str], str] = lambda name: name) -> Plan:
    """What to send and how: direct up to ``direct_limit`` bytes, presigned above; nothing the base holds.

    ``display_name`` is the name the server lists a file under (sluice.storage.display_name).
    """
    by_hash, unread = index_known(documents)
    result = Plan()
    first_of: dict[str, LocalFile] = {}
    for f in files:
        if f.sha256 in first_of:
            result.skipped.append(Skipped(f.shown, f"same content as {first_of[f.sha256].shown}"))
            continue
        first_of[f.sha256] = f
        known = by_hash.get(f.sha256) or unread.get((display_name(f.name), f.size))
        if known is not None and known.status == "error":
            result.failed_before.append((f, known))
        elif known is not None:
            result.present.append((f, known))
        elif f.size <= direct_limit:
            result.direct.append(f)
        else:
            result.presigned.append(f)
    return result


# --- talking to the API ----------------------------------------------------------------------

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


# --- progress and output ---------------------------------------------------------------------

class Progress(Protocol):
    def line(self, text: str) -> None: ...

    def step(self, title: str, total: int) -> contextlib.AbstractContextManager[Callable[[], None]]: ...


class PlainProgress:
    """Progress as lines: for logs, pipes and CI (no terminal)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        with self._lock:
            print(text, file=self.out, flush=True)

    @contextlib.contextmanager
    def step(self, title: str, total: int) -> Iterator[Callable[[], None]]:
        self.line(f"{title}: {total}")  # each file then says its own line
        yield lambda: None


class RichProgress:
    """A progress bar on a terminal (``rich``, in the local extra)."""

    def __init__(self, console: Any) -> None:
        self.console = console

    def line(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    @contextlib.contextmanager
    def step(self, title: str, total: int) -> Iterator[Callable[[], None]]:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        with Bar(TextColumn(title), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                 console=self.console, transient=False) as bar:
            task = bar.add_task(title, total=total)
            yield lambda: bar.advance(task)


def progress_for(out: TextIO) -> Progress:
    if out.isatty():
        try:
            from rich.console import Console
        except ImportError:
            return PlainProgress(out)
        return RichProgress(Console(file=out))
    return PlainProgress(out)


# --- the run ---------------------------------------------------------------------------------

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


# --- report ----------------------------------------------------------------------------------

def table(head: Sequence[str], rows: Sequence[Sequence[str]], width: int = 100) -> str:
    """Plain columns; the last one takes what is left and wraps."""
    import textwrap

    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head[:-1])]
    widths = [min(w, 48) for w in widths]
    rest = max(30, width - sum(widths) - 2 * len(widths))
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, [*widths, 0], strict=True)).rstrip(),
             "  ".join("-" * w for w in [*widths, min(rest, max(len(head[-1]), *(len(r[-1]) for r in rows)))])]
    for r in rows:
        wrapped = textwrap.wrap(r[-1], rest) or [""]
        cells = [c if len(c) <= w else c[: w - 1] + "…" for c, w in zip(r[:-1], widths, strict=True)]
        lines.append("  ".join([*(c.ljust(w) for c, w in zip(cells, widths, strict=True)), wrapped[0]]))
        pad = " " * (sum(widths) + 2 * len(widths))
        lines += [pad + more for more in wrapped[1:]]
    return "\n".join(lines)


def report(p: Plan, outcome: Outcome, progress: Progress, *, retry_failed: bool, followed: bool) -> int:
    """The skipped files, the failures with their reasons, the summary; the exit status (1: not all indexed)."""
    tracked = outcome.tracked
    direct = sum(1 for t in tracked if t.how == "direct")
    presigned = sum(1 for t in tracked if t.how == "presigned")
    retried = sum(1 for t in tracked if t.how == "retry")
    errors = [t for t in tracked if t.status == "error"]
    # Without following, processing is what a sent document is expected to be.
    waiting = [t for t in tracked if t.status == "processing"] if followed else []
    earlier = [] if retry_failed else p.failed_before

    if p.skipped:
        progress.line("\nSkipped:")
        progress.line(table(["file", "why"], [[s.shown, s.reason] for s in p.skipped]))
    failures = ([[t.file.shown, t.error_message or "failed"] for t in errors]
                + [[f.shown, f"not accepted: {reason}"] for f, reason in outcome.refused]
                + [[f.shown, f"failed earlier (--retry-failed sends it again): {k.error_message}"]
                   for f, k in earlier])
    if failures:
        progress.line("\nFailures:")
        progress.line(table(["file", "reason"], failures))

    parts = [f"{direct + presigned} uploaded" + (f" ({direct} direct, {presigned} presigned)"
                                                 if direct + presigned else "")]
    if retried:
        parts.append(f"{retried} retried")
    held = len(p.present) + len(earlier)
    if held:
        parts.append(f"{held} skipped as already in the base with the same content"
                     + (f" ({len(earlier)} of them failed earlier)" if earlier else ""))
    if p.skipped:
        parts.append(f"{len(p.skipped)} skipped (see above)")
    progress.line("\nSummary: " + ", ".join(parts) + ".")
    if followed and tracked:
        done = sum(1 for t in tracked if t.status == "done")
        still = f", {len(waiting)} still processing" if waiting else ""
        progress.line(f"Indexed: {done} done, {len(errors)} failed{still}.")
    if outcome.not_sent:
        progress.line(f"Not sent: {len(outcome.not_sent)} file(s): {outcome.halted} Run the same command again "
                      "later: what was sent is skipped.")
    return 1 if errors or outcome.refused or earlier or outcome.not_sent or waiting else 0


# --- entry point -----------------------------------------------------------------------------

def _token(args: argparse.Namespace) -> str:
    if args.token:
        return str(args.token)
    host = urlsplit(args.api).hostname or ""
    if host not in _LOOPBACK:
        raise SystemExit(f"--api {args.api} needs --token (or SLUICE_TOKEN)")
    import getpass

    from sluice.config import get_settings
    from sluice.local.tokens import dev_secret, mint

    if args.data_dir:
        data_dir = Path(args.data_dir)
    else:
        from sluice.local.runtime import project_root

        data_dir = project_root() / ".sluice"
    secret = dev_secret(data_dir, get_settings().dev_jwt_secret)
    return mint(secret, user=args.user or getpass.getuser(), org=args.org, permissions=args.perm or [],
                ttl_seconds=12 * 3600)


def _fields(args: argparse.Namespace) -> dict[str, Any]:
    fields: dict[str, Any] = {k: v for k, v in {
        "organizational_unit": args.organizational_unit, "document_type": args.document_type,
        "document_date": args.document_date}.items() if v}
    if args.ingestion:
        try:
            fields["ingestion"] = json.loads(args.ingestion)
        except ValueError as exc:
            raise SystemExit(f"--ingestion is not a JSON object: {exc}") from None
        if not isinstance(fields["ingestion"], dict):
            raise SystemExit("--ingestion must be a JSON object")
    return fields


def _resolve_kb(api: Api, args: argparse.Namespace) -> dict[str, Any]:
    if args.kb:
        kb: dict[str, Any] = api.call("GET", f"/kb/{args.kb}")
        return kb
    info = api.call("GET", f"/rag/collections/{args.collection}/info")
    ids = info["knowledge_base_ids"]
    if len(ids) != 1:
        raise Refused(409, "AMBIGUOUS", f"Collection {args.collection} is held by {len(ids)} knowledge bases "
                                        f"({', '.join(ids)}); name one with --kb.")
    found: dict[str, Any] = api.call("GET", f"/kb/{ids[0]}")
    return found


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    if not UNREACHABLE:
        from sluice.cli.api_client import NEEDS_CLIENT

        print(NEEDS_CLIENT.replace("--api", "sluice ingest"), file=sys.stderr)
        return 2
    from sluice.storage import display_name

    out = out or sys.stdout
    progress = progress_for(out)
    root = Path(args.path)
    if not root.exists():
        print(f"{root}: no such file or folder", file=sys.stderr)
        return 2
    fields = _fields(args)
    headers = {"Authorization": f"Bearer {_token(args)}"}
    timeout = httpx.Timeout(120.0, connect=10.0)
    with httpx.Client(base_url=args.api.rstrip("/"), headers=headers, timeout=timeout,
                      transport=api_transport(retries=2)) as client, \
            httpx.Client(timeout=timeout) as storage:
        api = Api(client, progress.line, max_wait=args.max_wait)
        try:
            kb = _resolve_kb(api, args)
            if not kb.get("can_write", True):
                print(f"You may read knowledge base {kb['id']} but not add documents to it.", file=sys.stderr)
                return 1
            extensions = api.call("GET", "/rag/supported-formats")["knowledge_base"]
            files, skipped = collect(root, extensions)
            known = list_documents(api, kb["id"])
        except UNREACHABLE as exc:
            hint = " Is `sluice local up` running?" if args.api.rstrip("/") == LOCAL_API else ""
            print(f"No Sluice API answers at {args.api}: {exc.__cause__ or exc}.{hint}", file=sys.stderr)
            return 2
        except (Refused, Halted) as exc:
            print(f"{args.api}: {exc}", file=sys.stderr)
            return 1
        p = plan(files, known, direct_limit=args.direct_limit, display_name=display_name)
        p.skipped[:0] = skipped
        progress.line(f"Knowledge base {kb['name']} ({kb['id']}) → collection {kb['collection_name']}: "
                      f"{len(files)} file(s) found, {len(p.to_send)} to send, "
                      f"{len(p.present) + len(p.failed_before)} already in the base.")
        outcome = Outcome()
        sender = Sender(api, kb["id"], fields, progress, storage=storage, direct_limit=args.direct_limit)
        items = [(f, False) for f in p.direct] + [(f, True) for f in p.presigned]
        if items:
            send_all(sender, items, args.concurrency, outcome)
        if args.retry_failed and p.failed_before and outcome.halted is None:
            retry_all(api, sender, p.failed_before, outcome)
        # Sent by an earlier run and still being indexed: followed with the rest.
        outcome.tracked += [Tracked(f, k.id, "present") for f, k in p.present if k.status == "processing"]
        if not args.no_follow and outcome.tracked:
            try:
                follow(api, kb["id"], outcome.tracked, progress, timeout=args.timeout)
            except FOLLOW_STOPPED as exc:
                progress.line(f"stopped following: {exc}")
        return report(p, outcome, progress, retry_failed=args.retry_failed, followed=not args.no_follow)
