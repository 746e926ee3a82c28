"""What a run does with one file (R-SYNC-1..3): the modes' meanings, the change signal before the
download, the content hash after it, failures that are not fetched again, and matching that never
takes a document at another address for this file."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from sluice.db.document_claims import Claim
from sluice.db.documents import Document
from sluice.db.sync_runs import RunFile
from sluice.sync.planning import IGNORED_NEW, Fetch, FileFacts, Ingest, Skip, decide_after, decide_before

PATH = "s3://bucket/docs/guide.md"
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def doc(status: str = "done", *, path: str | None = PATH, etag: str | None = "e1", size: int | None = 100,
        content_hash: str | None = "h1", name: str = "guide.md", age: int = 0, error: str | None = None) -> Document:
    return Document(
        id=uuid.uuid4(), kb_id=uuid.uuid4(), org_id=None, collection_name="c", filename=name, filesize=size,
        filetype="text/markdown", status=status, stage="done", error_message=error, vector_document_id=None,
        chunk_count=1, storage_path="rag/c/x_guide.md", source="sync", source_path=path, content_hash=content_hash,
        organizational_unit=None, document_type=None, document_date=None, uploaded_by=None, attempt=1,
        ingestion_override=None, replaces_document_id=None, created_at=NOW - timedelta(minutes=age),
        updated_at=None, completed_at=None, source_etag=etag)


def claim(d: Document, etag: str | None = "e1", size: int | None = 100, age: int = 0) -> Claim:
    return Claim(PATH, etag, size, NOW - timedelta(minutes=age), d)


def listed(etag: str | None = "e1", size: int = 100) -> RunFile:
    return RunFile(seq=1, batch=0, source_path=PATH, remote_key="docs/guide.md", name="guide.md", etag=etag,
                   size=size)


MODES = ("new_only", "update_only", "full")


@pytest.mark.parametrize("mode", ["new_only", "update_only"])
def test_an_unchanged_signal_skips_without_a_download(mode):
    current = doc()
    decision = decide_before(FileFacts(listed(), [claim(current)]), mode)
    assert decision == Skip("unchanged", None, current)


def test_full_fetches_and_replaces_even_what_is_unchanged():
    current = doc()
    assert decide_before(FileFacts(listed(), [claim(current)]), "full") == Fetch(current)
    assert decide_after(current, "h1", None, "full") == Ingest(current)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("etag", "size"), [("e2", 100), ("e1", 101), (None, 100)])
def test_a_changed_or_missing_signal_fetches(mode, etag, size):
    current = doc()
    assert decide_before(FileFacts(listed(etag, size), [claim(current)]), mode) == Fetch(current)


@pytest.mark.parametrize("mode", ["new_only", "update_only"])
def test_after_the_download_equal_bytes_are_unchanged_and_other_bytes_an_update(mode):
    current = doc(content_hash="h1")
    assert decide_after(current, "h1", None, mode) == Skip("unchanged", None, current)
    replaced = decide_after(current, "h2", None, mode)
    assert replaced == Ingest(current) and replaced.outcome == "updated"


def test_a_stored_document_without_a_content_hash_is_ingested_again_not_assumed_current():
    current = doc(content_hash=None)
    assert decide_after(current, "h1", None, "new_only") == Ingest(current)


def test_a_new_file_is_ingested_except_in_update_only_where_it_is_ignored_before_any_download():
    assert decide_before(FileFacts(listed()), "new_only") == Fetch(None)
    assert decide_before(FileFacts(listed()), "full") == Fetch(None)
    assert decide_before(FileFacts(listed()), "update_only") == Skip("ignored", IGNORED_NEW)
    new = decide_after(None, "h1", None, "new_only")
    assert new == Ingest(None) and new.outcome == "new"


def test_a_failed_file_is_not_fetched_again_until_its_signal_changes():
    failed = doc("error", etag="e2", error="The document could not be indexed (AuthenticationError) - check it.")
    good = doc("done", age=10)
    facts = FileFacts(listed("e2"), [claim(failed, "e2"), claim(good, "e1", age=10)])
    decision = decide_before(facts, "new_only")
    assert isinstance(decision, Skip) and decision.outcome == "failed"
    assert decision.reason is not None and decision.reason.startswith(
        "Unchanged since it failed: The document could not be indexed (AuthenticationError)")
    # retry-failed fetches it regardless; the searchable version is what it would replace
    assert decide_before(facts, "new_only", forced=True) == Fetch(good)
    # and a changed signal is fetched by the next ordinary run
    changed = FileFacts(listed("e3"), [claim(failed, "e2"), claim(good, "e1", age=10)])
    assert decide_before(changed, "new_only") == Fetch(good)


def test_a_document_at_the_address_with_the_same_signal_is_claimed_without_a_download():
    # another source of the base listing the same object got there first
    there = doc(etag="e1", size=100)
    assert decide_before(FileFacts(listed(), at_address=[there]), "new_only") == Skip("unchanged", None, there)
    assert decide_before(FileFacts(listed("e9"), at_address=[there]), "new_only") == Fetch(there)


def test_an_upload_of_the_same_name_is_replaced_not_duplicated():
    upload = doc(path=None, etag=None)
    assert decide_before(FileFacts(listed(), by_name=[upload]), "new_only") == Fetch(upload)
    assert decide_after(upload, "h-other", None, "new_only") == Ingest(upload)
    assert decide_after(upload, "h1", None, "new_only") == Skip("unchanged", None, upload)


def test_equal_bytes_at_no_address_are_adopted_after_the_download():
    upload = doc(path=None, etag=None, name="other-name.md", content_hash="h1")
    assert decide_after(None, "h1", upload, "new_only") == Skip("unchanged", None, upload)
    assert decide_after(None, "h1", upload, "full") == Ingest(upload)


def test_a_processing_document_at_the_address_is_joined_not_repeated():
    running = doc("processing")
    assert decide_before(FileFacts(listed(), at_address=[running]), "new_only") == Skip(
        "unchanged", "Being indexed for another source that lists the same address.", running)


def test_a_claim_confirms_the_newest_searchable_version_when_its_latest_failed_with_another_signal():
    failed = doc("error", etag="e2")
    good = doc("done", etag="e1", age=10)
    facts = FileFacts(listed("e1"), [claim(failed, "e2"), claim(good, "e1", age=10)])
    assert decide_before(facts, "new_only") == Fetch(good)
    assert decide_after(good, "h1", None, "new_only") == Skip("unchanged", None, good)
