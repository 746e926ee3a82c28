"""What a run does with one listed file: the decision, from facts gathered by indexed lookups.

Matching (R-SYNC-3) asks, in order: this source's own claim at the file's address; a
document of the base at that address; a document of that name that no address claims (an
upload, so a file uploaded by hand and later synced is replaced rather than duplicated);
where the change signal names the content (a git blob id, a Drive md5Checksum:
``Connector.content_id``), this source's document with that signal at an address this run's
whole listing no longer names - the same file renamed (to a name of the same kind), moved to its
new address without a fetch;
and, after the download, a document with the same bytes at no address. A document naming a
different address is never a candidate: ``a/readme.md`` and ``b/readme.md`` are two files.

The modes (R-SYNC-1), one meaning for every connector:

=============  ====================================================================
``new_only``   the default: a new file is ingested, a changed one replaces what it
               matches, an unchanged one is skipped
``update_only`` as new_only, but a file matching nothing is ignored (decided before
               any download: no bytes are needed to skip a file never seen)
``full``       every listed file is ingested again, replacing whatever it matches
=============  ====================================================================

The change signal (an S3 ETag with the size, an opaque token) decides before the
download; when it changed, the content hash decides after it, before the embedding, which
is the expensive half. A stored document without a content hash is re-ingested rather than
assumed current. A file whose last ingestion failed is not fetched again until its signal
changes (no retry loop); a retry of failed files (``forced``) fetches it regardless.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from sluice.db.document_claims import Claim
from sluice.db.documents import Document
from sluice.db.sync_runs import RunFile

MODES = ("new_only", "update_only", "full")
IGNORED_NEW = "New files are not added in update_only mode."


@dataclass(frozen=True)
class FileFacts:
    """What the lookups found for one file; empty lists when a lookup could not answer."""

    file: RunFile
    claims: list[Claim] = field(default_factory=list)  # this source's, most recently confirmed first
    at_address: list[Document] = field(default_factory=list)  # the base's, newest first
    by_name: list[Document] = field(default_factory=list)  # unaddressed, newest first
    # this source's claims with the file's content id at addresses the run did not list (a rename)
    moved: list[Claim] = field(default_factory=list)


@dataclass(frozen=True)
class Skip:
    """Decided without a download: ``unchanged`` (confirm the claim on ``document``), ``failed`` or ``ignored``."""

    outcome: str
    reason: str | None = None
    document: Document | None = None


@dataclass(frozen=True)
class Fetch:
    """Download and hash the file; ``current`` is the searchable document it would replace, if any."""

    current: Document | None


@dataclass(frozen=True)
class Move:
    """The file is ``claim``'s document renamed: readdress it (its chunks kept), fetch nothing."""

    claim: Claim

    def reason(self) -> str:
        return (f"Renamed from {self.claim.source_path}: its document was kept under this address, not fetched "
                "or embedded again.")


@dataclass(frozen=True)
class Ingest:
    """Hand the bytes to the pipeline; ``replaces`` is retired once the new document is stored."""

    replaces: Document | None

    @property
    def outcome(self) -> str:
        return "updated" if self.replaces is not None else "new"


def _same_signal(etag: str | None, size: int | None, file: RunFile) -> bool:
    return bool(etag) and etag == file.etag and size == file.size


def _same_kind(a: str, b: str) -> bool:
    """Whether two names would be read the same way (their extension): a rename to another kind is read anew."""
    return PurePosixPath(a).suffix.lower() == PurePosixPath(b).suffix.lower()


def _done(docs: list[Document]) -> Document | None:
    return next((d for d in docs if d.status == "done"), None)


def carried_failure(doc: Document) -> str:
    return (f"Unchanged since it failed: {doc.error_message or 'the document could not be indexed.'} "
            "It is not fetched again until it changes; retry-failed retries it now.")


def decide_before(facts: FileFacts, mode: str, *, forced: bool = False) -> Skip | Fetch | Move:
    """The decision the change signal allows before any byte is fetched."""
    f = facts.file
    redo = forced or mode == "full"
    if facts.claims:
        latest = facts.claims[0]
        doc = latest.document
        if _same_signal(latest.etag, latest.size, f) and not redo:
            if doc.status == "error":
                return Skip("failed", carried_failure(doc))
            if doc.status == "processing":
                return Skip("unchanged", "Still being indexed from an earlier run.", doc)
            return Skip("unchanged", None, doc)
        current = _done([c.document for c in facts.claims]) or _done(facts.at_address)
        return Fetch(current)
    at = _done(facts.at_address)
    if at is not None:
        if not redo and _same_signal(at.source_etag, at.filesize, f):
            return Skip("unchanged", None, at)
        return Fetch(at)
    in_flight = next((d for d in facts.at_address if d.status == "processing"
                      and _same_signal(d.source_etag, d.filesize, f)), None)
    if in_flight is not None and not redo:
        return Skip("unchanged", "Being indexed for another source that lists the same address.", in_flight)
    failed = next((d for d in facts.at_address if d.status == "error"
                   and _same_signal(d.source_etag, d.filesize, f)), None)
    if failed is not None and not redo:
        return Skip("failed", carried_failure(failed))
    named = _done(facts.by_name)
    if named is not None:
        return Fetch(named)
    moved = next((c for c in facts.moved if c.document.status == "done" and _same_signal(c.etag, c.size, f)
                  and _same_kind(c.document.filename, f.name)), None)
    if moved is not None and not redo:
        return Move(moved)
    if mode == "update_only" and not facts.at_address:
        return Skip("ignored", IGNORED_NEW)
    return Fetch(None)


def decide_after(current: Document | None, content_hash: str, same_content: Document | None, mode: str
                 ) -> Skip | Ingest:
    """The decision the bytes allow: unchanged content is confirmed, anything else is ingested.

    ``same_content`` is what the content-hash lookup found, asked only when nothing matched
    before the download.
    """
    if current is None and same_content is not None:
        current = same_content
    if current is None:
        return Ingest(None)
    if mode != "full" and current.content_hash and current.content_hash == content_hash:
        return Skip("unchanged", None, current)
    return Ingest(current)
