"""What a connector is, and the object-store connector every bucket-like store shares.

A connector is a listing, a fetch and a ``CONFIG_MODEL``. The base class, not a
connector, decides where fetched bytes land (``remote_names.destination``), refuses a
credential inside a config, and names the field a refusal is about. An object store (S3,
Azure Blob, GCS) is less than that: ``ObjectStoreConnector`` holds the paged listing loop,
the ``<scheme>://<container>/<key>`` address, the directory-marker skip and the
"is this listing whole" answer; a subclass supplies a client, a ``SCHEME``, which config
field names the container, one page of a listing and one download.
"""

from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from sluice.config import SyncContextSettings
from sluice.sync.remote_names import destination

log = logging.getLogger("sluice.sync")

CREDENTIAL_SENTENCE = "a credential does not go in a source's configuration"
# Field names that carry a credential, compared without case, '-' or '_'.
_CREDENTIAL_NAMES = re.compile(
    r"(secret(?!id$)|password|passwd|token|credential|accesskey|privatekey|apikey|serviceaccount|clientsecret)")
# Values that are a credential whatever their field is called: AWS access key ids, PEM private keys.
_CREDENTIAL_VALUES = re.compile(r"(\b(AKIA|ASIA)[0-9A-Z]{16}\b|-----BEGIN [A-Z ]*PRIVATE KEY-----)")


@dataclass(frozen=True)
class RemoteFile:
    """One file of a listing: its key in the container, its address, and its change signal."""

    key: str
    source_path: str
    size: int
    etag: str | None
    modified: datetime | None = None
    # A file the connector names and will not fetch (a git submodule, an LFS pointer): the run
    # reports it as ignored with this sentence.
    note: str | None = None
    # A file the connector tried and could not read (a web page answering 5xx, a refused redirect):
    # the run reports it failed with this sentence, and fetches nothing.
    failure: str | None = None
    # Why the connector expects it unchanged (a web page's 304): the report's reason when the change
    # signal then decides it unchanged.
    hint: str | None = None


@dataclass
class RemoteListing:
    """What a listing named, and whether that is everything (a run removes nothing otherwise)."""

    files: list[RemoteFile]
    complete: bool
    problem: str | None = None
    markers_skipped: int = 0
    # What the connector keeps for its next run (a delta link, the commit a ref pointed at), kept only
    # if this run succeeds with no failed file; None keeps nothing new.
    state: dict[str, Any] | None = None
    # Nothing changed since the kept state (an unchanged git ref): ``files`` is empty and the run
    # decides nothing and removes nothing.
    unchanged: bool = False
    # The state is what the connector knows of the remote side (a web crawl's validators and links),
    # not a cursor: kept at once, whatever the run's outcome, since every decision is still made
    # against the source's claims (a page whose ingestion failed is fetched again).
    keep_state_now: bool = False


class ListingJournal(Protocol):
    """Where a listing of several steps keeps what it did (the run's journal, migration 0023)."""

    def entries(self) -> list[dict[str, Any]]:
        """What earlier steps of this run's listing wrote, in order (empty for the first step)."""

    def append(self, entries: list[dict[str, Any]]) -> None:
        """Keep ``entries`` now (committed: a step killed after this replays them)."""


class SourceRefused(Exception):
    """A run cannot open its source (its credential, its config); the message is the sentence the run records."""


@dataclass(frozen=True)
class ConfigRefusal:
    """A connector's no: a sentence, and the config field it is about (None: the config as a whole)."""

    message: str
    field: str | None = None


@dataclass(frozen=True)
class ListedPage:
    entries: list[RemoteFile]
    next_token: str | None
    extra: dict[str, Any] = field(default_factory=dict)


def cut_at(limit: int) -> str:
    return (f"The listing was cut at {limit} files, the most one run lists (SYNC_MAX_KEYS_PER_RUN): those were "
            "synced and nothing was removed. Narrow the source's prefix, or split it into several sources.")


def credential_refusal(config: Mapping[str, Any], path: str = "") -> ConfigRefusal | None:
    """A refusal naming the first field of ``config`` that holds a credential, or None."""
    for key, value in config.items():
        dotted = f"{path}.{key}" if path else str(key)
        if _CREDENTIAL_NAMES.search(re.sub(r"[-_\s]", "", str(key)).lower()):
            return ConfigRefusal(CREDENTIAL_SENTENCE, dotted)
        if isinstance(value, str) and _CREDENTIAL_VALUES.search(value):
            return ConfigRefusal(CREDENTIAL_SENTENCE, dotted)
        if isinstance(value, Mapping):
            nested = credential_refusal(value, dotted)
            if nested is not None:
                return nested
    return None


def _sentence(err: Mapping[str, Any]) -> str:
    if err.get("type") == "extra_forbidden":
        return "Not a field of this connector's configuration."
    if err.get("type") == "missing":
        return "Required."
    message = str(err.get("msg") or "Not valid.").removeprefix("Value error, ").strip()
    return message if message.endswith(".") else message + "."


class Connector(ABC):
    """A source's remote side: list what is there, fetch one file into a working directory."""

    CONNECTOR_TYPE: ClassVar[str]
    TITLE: ClassVar[str]
    CONFIG_MODEL: ClassVar[type[BaseModel]]
    # The kind of vault secret a source of this connector names in secret_id, or None for none.
    SECRET_KIND: ClassVar[str | None]
    # Whether a source may name no secret at all (a public git repository): the connector then reads
    # without a credential, never with one of the deployment's.
    SECRET_OPTIONAL: ClassVar[bool] = False
    # What the listing carries that says "changed" before any byte is fetched (DESIGN: a signal
    # the flow can read before the download is the difference between a nightly run that costs a
    # listing and one that costs the whole folder). The content hash is the fallback.
    CHANGE_SIGNAL: ClassVar[str]

    @classmethod
    def content_id(cls, etag: str | None) -> str | None:
        """The file's content named by its change signal, where the signal is a content id (git's blob id,
        Drive's md5Checksum): two files with the same one hold the same bytes, so a file that appears at a
        new address with the signal of one that left its old address is that file renamed (R-SYNC-3), and
        its document moves without a fetch. None (the default): the signal is an opaque token (an S3 or
        Azure ETag, a version number) that two different files may share."""
        return None

    @classmethod
    def validate_config(cls, config: Mapping[str, Any], settings: SyncContextSettings) -> ConfigRefusal | None:
        """None when ``config`` is acceptable in this deployment, else the refusal and the field it names."""
        refusal = credential_refusal(config)
        if refusal is not None:
            return refusal
        try:
            model = cls.CONFIG_MODEL.model_validate(dict(config))
        except PydanticValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or None
            return ConfigRefusal(_sentence(err), where)
        return cls.check(model, settings)

    @classmethod
    def check(cls, model: BaseModel, settings: SyncContextSettings) -> ConfigRefusal | None:
        """A connector's own rules beyond its model's fields, in this deployment (none by default).

        Asked when a config is written and again by every run before it lists, so a config
        written before a rule existed does not run past it.
        """
        return None

    @classmethod
    def parse_config(cls, config: Mapping[str, Any]) -> BaseModel:
        return cls.CONFIG_MODEL.model_validate(dict(config))

    @classmethod
    @abstractmethod
    def open(cls, config: BaseModel, credential: str | None, *, external_id: str, settings: SyncContextSettings,
             client_factory: Any, state: Mapping[str, Any]) -> Connector:
        """A connector for one run: ``credential`` is the source's secret value (None: it names none);
        ``state`` what its last successful run kept (``RemoteListing.state``; empty the first time)."""

    def list_step(self, limit: int | None, journal: ListingJournal) -> RemoteListing | None:
        """One bounded step of the listing: the listing when it is done, None when a next step must go on
        from what ``journal`` holds. A connector whose listing fits one step lists at once."""
        return self.list_files(limit)

    def transfer(self) -> tuple[int, int] | None:
        """Requests made and bytes received since it was opened (None: the connector does not count)."""
        return None

    @abstractmethod
    def list_files(self, limit: int | None = None) -> RemoteListing:
        """Everything the source names now, up to ``limit`` files; ``complete`` False if the listing
        stopped part-way or at the limit with more to come."""

    def fetch(self, file: RemoteFile, workdir: Path, max_bytes: int) -> Path:
        """Write ``file`` into ``workdir`` under its name's final component; returns where.

        The destination is this class's answer (R-SYNC-4), never a connector's: an
        implementation is handed a path and writes to it, at most ``max_bytes`` + 1 bytes
        (one more than allowed says "too large" without holding the rest).
        """
        target = destination(workdir, file.key)
        self._fetch(file, target, max_bytes)
        return target

    @abstractmethod
    def _fetch(self, file: RemoteFile, target: Path, max_bytes: int) -> None:
        """Write the file's bytes (at most ``max_bytes`` + 1 of them) to ``target``."""

    def describe_failure(self, exc: BaseException) -> str:
        """What a failed call was, in words that name no host, bucket or URL (its class, its code)."""
        return type(exc).__name__


class ObjectStoreConnector(Connector):
    """S3, Azure Blob and GCS are one connector with three clients: the listing loop lives here."""

    SCHEME: ClassVar[str]
    # The CONFIG_MODEL field that names the container: bucket for S3 and GCS, container for Azure.
    CONTAINER_FIELD: ClassVar[str] = "bucket"
    PAGE_SIZE: ClassVar[int] = 1000
    CHANGE_SIGNAL = "the object's ETag and size, compared as an opaque token (an ETag is not a content hash)"

    def __init__(self, config: BaseModel) -> None:
        self.config = config
        self.container = str(getattr(config, self.CONTAINER_FIELD))
        self.prefix = str(getattr(config, "prefix", "") or "")

    def address(self, key: str) -> str:
        return f"{self.SCHEME}://{self.container}/{key}"

    @abstractmethod
    def _list_page(self, token: str | None) -> ListedPage:
        """One page of the listing under ``self.prefix``, and the token of the next (None: the last)."""

    def list_files(self, limit: int | None = None) -> RemoteListing:
        files: list[RemoteFile] = []
        markers = 0
        token: str | None = None
        seen: set[str] = set()
        while True:
            try:
                page = self._list_page(token)
            except Exception as exc:
                # A page that failed is a listing that is not whole: the run removes nothing.
                log.warning("a listing stopped part-way", exc_info=exc,
                            extra={"connector": self.CONNECTOR_TYPE, "listed": len(files)})
                return RemoteListing(files, False, self._stopped(exc, len(files)), markers)
            for entry in page.entries:
                if entry.key.endswith("/") and entry.size == 0:
                    markers += 1  # a directory marker (a console's "folder"), not a file
                    continue
                if limit is not None and len(files) >= limit:
                    # One file more than a run lists: what was listed is synced, the listing is not whole.
                    return RemoteListing(files, False, cut_at(limit), markers)
                files.append(entry)
            if page.next_token is None:
                return RemoteListing(files, True, None, markers)
            if page.next_token in seen:
                return RemoteListing(files, False, "The listing repeated a page it had already sent.", markers)
            seen.add(page.next_token)
            token = page.next_token

    def _stopped(self, exc: BaseException, listed: int) -> str:
        what = self.describe_failure(exc)
        if listed == 0:
            return (f"The source could not be listed ({what}): check the source's credential and "
                    f"{self.CONTAINER_FIELD}. Nothing was removed.")
        return (f"The listing stopped part-way ({what}) after {listed} file(s); those were synced and "
                "nothing was removed.")
