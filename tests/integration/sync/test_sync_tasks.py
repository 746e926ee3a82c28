"""The run's steps against the real embedded PostgreSQL and a moto bucket for Sluice's own storage,
with a connector that serves files from memory (the remote side is not what these test): matching
that cannot answer is "no match", a replacement names what it replaces and leaves it in place,
claims, and what reconcile may remove."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pydantic import BaseModel

from sluice.config import get_settings
from sluice.db import document_claims as claims
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db import sync_runs as runs
from sluice.db import sync_sources as sources
from sluice.db.connection import transaction
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.db.sync_sources import SyncSource
from sluice.sync import tasks
from sluice.sync.connectors import ConnectorOpener, ObjectStoreConnector, RemoteFile, RemoteListing
from sluice.sync.context import SyncContext
from tests.fakes import DIM
from tests.integration.moto_bucket import Bucket


class MemoryConnector(ObjectStoreConnector):
    CONNECTOR_TYPE = "memory"
    TITLE = "memory"
    SECRET_KIND = None
    SCHEME = "mem"
    CONFIG_MODEL = BaseModel

    def __init__(self, objects: dict[str, bytes], fail_pages: bool = False) -> None:
        self.container, self.prefix, self.objects, self.fail_pages = "box", "", objects, fail_pages
        self.fetched: list[str] = []

    @classmethod
    def open(cls, *args: Any, **kwargs: Any) -> MemoryConnector:
        raise NotImplementedError

    def _list_page(self, token: str | None) -> Any:
        from sluice.sync.connectors.base import ListedPage

        if self.fail_pages:
            raise OSError("the remote went away")
        return ListedPage([RemoteFile(k, self.address(k), len(v), hashlib.md5(v).hexdigest())  # noqa: S324
                           for k, v in sorted(self.objects.items())], None)

    def _fetch(self, file: RemoteFile, target: Path, max_bytes: int) -> None:
        self.fetched.append(file.key)
        target.write_bytes(self.objects[file.key][: max_bytes + 1])


@dataclass
class Opener:
    connector: MemoryConnector

    def open(self, source: SyncSource, kb: KnowledgeBase) -> MemoryConnector:
        return self.connector


@dataclass
class Bench:
    ctx: SyncContext
    kb: KnowledgeBase
    source: SyncSource
    remote: MemoryConnector
    s3: Any
    bucket: str
    extra: dict[str, Any] = field(default_factory=dict)

    def run(self, trigger: str = "manual", *, finish: bool = True) -> uuid.UUID:
        """List and decide every batch (the pipeline is not running here); finish unless told not to."""
        with transaction() as conn:
            run = runs.insert(conn, source_id=self.source.id, kb_id=self.kb.id, collection_name=self.kb.collection_name,
                              connector="memory", sync_mode=self.source.sync_mode, trigger=trigger, started_by="t")
        listed = tasks.run_task(self.ctx, {"task": "list", "run_id": str(run.id)})
        for item in listed["batches"]:
            tasks.run_task(self.ctx, {"task": "batch", **item})
        if finish:
            tasks.run_task(self.ctx, {"task": "finish", "run_id": str(run.id)})
        return run.id

    def outcomes(self, run_id: uuid.UUID) -> dict[str, tuple[str | None, uuid.UUID | None]]:
        with transaction() as conn:
            files, _ = runs.files_page(conn, run_id, limit=100, offset=0)
        return {f.remote_key: (f.outcome, f.document_id) for f in files}


def make_bench(bucket: Bucket, *, scope: str = "org", owner_id: str | None = None, **settings_update: Any
               ) -> Bench:
    remote = MemoryConnector({"guide.md": b"# Guide\n\nVersion one of the guide.\n"})
    settings = get_settings().model_copy(update={"sync_await_seconds": 0, **settings_update})
    ctx = SyncContext(uow=transaction, store=bucket.store, settings=settings,
                      connectors=ConnectorOpener(settings, None))
    ctx.connectors = Opener(remote)  # type: ignore[assignment]
    kb = KnowledgeBase(
        id=uuid.uuid4(), name="Sync", collection_name=f"sync_{uuid.uuid4().hex[:6]}", scope=scope,
        owner_id=owner_id, org_id="acme", is_default=False, description="", embedding_provider="local",
        embedding_model="all-MiniLM-L6-v2", embedding_dim=DIM, embedding_base_url=None,
        embedding_secret_id=None, ingestion_config={}, created_by=owner_id or "t")
    with transaction() as conn:
        kb = kb_repo.insert(conn, kb)
        source = sources.insert(conn, SyncSource(
            id=uuid.uuid4(), kb_id=kb.id, name="mem", connector="memory", config={}, secret_id=None,
            sync_mode="new_only", organizational_unit="ops", schedule=None, created_by="t"))
    return Bench(ctx, kb, source, remote, bucket.s3, bucket.name)


@pytest.fixture
def bench(db_url, bucket: Bucket) -> Bench:
    return make_bench(bucket)


def finish_indexing(doc_id: uuid.UUID) -> None:
    """What the embed stage does when it stores a document: done, and what it replaces retired."""
    from sluice.ingest.retire import retire_replaced

    with transaction() as conn:
        doc = doc_repo.get(conn, doc_id)
        assert doc is not None
        retire_replaced(conn, doc)
        doc_repo.mark_done(conn, doc_id, chunk_count=0, vector_document_id=None)


def test_a_handed_over_file_is_a_committed_row_a_claim_and_then_an_encrypted_object(bench: Bench):
    run_id = bench.run()
    outcome, doc_id = bench.outcomes(run_id)["guide.md"]
    assert outcome == "new" and doc_id is not None
    with transaction() as conn:
        doc = doc_repo.get(conn, doc_id)
        assert claims.claimants(conn, doc_id) == [bench.source.id]
    assert doc is not None and doc.source == "sync" and doc.source_path == "mem://box/guide.md"
    assert doc.organizational_unit == "ops" and doc.uploaded_by == f"sync:{bench.source.id}"
    head = bench.s3.head_object(Bucket=bench.bucket, Key=doc.storage_path)
    assert head["ServerSideEncryption"] == "aws:kms" and head["Metadata"] == {"document-id": str(doc_id)}


def test_a_replacement_names_what_it_replaces_which_stays_until_the_new_one_is_stored(bench: Bench):
    first = bench.outcomes(bench.run())["guide.md"][1]
    assert first is not None
    finish_indexing(first)
    bench.remote.objects["guide.md"] = b"# Guide\n\nVersion two of the guide.\n"
    outcome, second = bench.outcomes(bench.run())["guide.md"]
    assert outcome == "updated" and second is not None
    with transaction() as conn:
        new = doc_repo.get(conn, second)
        assert new is not None and new.replaces_document_id == first
        assert doc_repo.get(conn, first) is not None  # both, until the new one is stored
    finish_indexing(second)
    with transaction() as conn:
        assert doc_repo.get(conn, first) is None  # and then only the new one
        assert claims.claimants(conn, second) == [bench.source.id]


def test_a_lookup_that_cannot_answer_is_no_match_never_present(bench: Bench, monkeypatch):
    first = bench.outcomes(bench.run())["guide.md"][1]
    assert first is not None
    finish_indexing(first)
    fetched = len(bench.remote.fetched)

    def cannot(*args: Any, **kwargs: Any) -> Any:
        raise psycopg.OperationalError("the index could not be read")

    for lookup in ("claims_at", "by_addresses", "unaddressed_by_names", "by_content"):
        monkeypatch.setattr(claims, lookup, cannot)
    outcome, doc_id = bench.outcomes(bench.run())["guide.md"]
    # not "unchanged": a failed lookup is no evidence the document is there; the file is fetched and ingested
    assert outcome == "new" and doc_id not in (None, first)
    assert len(bench.remote.fetched) == fetched + 1
    monkeypatch.undo()
    with transaction() as conn:
        assert doc_repo.get(conn, first) is not None  # nothing was deleted on the strength of it
    finish_indexing(doc_id)
    with transaction() as conn:  # and the new row at the same address still retires the old one: no duplicate
        assert [d.id for d in doc_repo.by_address(conn, bench.kb.id, "mem://box/guide.md")] == [doc_id]


def test_reconcile_removes_only_after_a_whole_listing_and_only_unclaimed_documents(bench: Bench):
    bench.remote.objects["other.md"] = b"# Other\n\nAnother document.\n"
    run_id = bench.run()
    ids = {k: v[1] for k, v in bench.outcomes(run_id).items()}
    for doc_id in ids.values():
        assert doc_id is not None
        finish_indexing(doc_id)
    with transaction() as conn:
        second = sources.insert(conn, SyncSource(
            id=uuid.uuid4(), kb_id=bench.kb.id, name="second", connector="memory", config={}, secret_id=None,
            sync_mode="new_only", organizational_unit=None, schedule=None, created_by="t"))
        claims.claim(conn, second.id, ids["other.md"], "mem://box/other.md", None, None)
    del bench.remote.objects["guide.md"], bench.remote.objects["other.md"]

    bench.remote.fail_pages = True
    failed = bench.run(finish=False)
    assert tasks.run_task(bench.ctx, {"task": "reconcile", "run_id": str(failed)}) == {
        "removed": 0, "skipped": "the listing was not whole"}
    assert tasks.run_task(bench.ctx, {"task": "finish", "run_id": str(failed)}) == {"status": "failed"}
    bench.remote.fail_pages = False
    whole = bench.run(finish=False)
    assert tasks.run_task(bench.ctx, {"task": "reconcile", "run_id": str(whole)}) == {"removed": 1}
    with transaction() as conn:
        assert doc_repo.get(conn, ids["guide.md"]) is None  # no source lists it
        assert doc_repo.get(conn, ids["other.md"]) is not None  # the second source still claims it
        assert claims.claimants(conn, ids["other.md"]) == [second.id]
    assert tasks.run_task(bench.ctx, {"task": "finish", "run_id": str(whole)}) == {"status": "succeeded"}
    with transaction() as conn:
        done = runs.get(conn, whole)
    assert done is not None and (done.files_listed, done.files_removed) == (0, 1)


def test_a_sync_into_a_private_pool_counts_against_its_owners_upload_limits(db_url, bucket: Bucket):
    # GIVEN a personal base (a private pool) whose owner may add 3 documents a minute, and a source of 5 files
    b = make_bench(bucket, scope="personal", owner_id="pia", upload_rate_per_minute=3, upload_rate_per_day=50,
                   private_doc_cap=20)
    b.remote.objects = {f"note{i}.md": f"# Note {i}\n\nThe note number {i}.\n".encode() for i in range(5)}
    # WHEN it runs
    first_run = b.run()
    first = b.outcomes(first_run)
    # THEN three are added, and two are deferred with a sentence, without a download
    assert {k: o for k, (o, _) in first.items()} == {
        "note0.md": "new", "note1.md": "new", "note2.md": "new", "note3.md": "failed", "note4.md": "failed"}
    assert b.remote.fetched == ["note0.md", "note1.md", "note2.md"]
    with transaction() as conn:
        reasons = {f.remote_key: f.reason for f in runs.files_page(conn, first_run, limit=10, offset=0)[0]}
        held = conn.execute("SELECT count(*) AS n FROM documents WHERE kb_id = %s", (b.kb.id,)).fetchone()
        counted = conn.execute("SELECT count(*) AS n FROM upload_events WHERE user_id = 'pia'").fetchone()
    assert reasons["note3.md"] == (
        "Deferred: a private knowledge base takes at most 3 documents a minute and 50 a day from its owner's "
        "uploads and syncs together, and that is used up for now. The file was not fetched; the next run "
        "takes it.")
    assert held is not None and held["n"] == 3  # nothing stored for the deferred files: no row to forget them by
    assert counted is not None and counted["n"] == 3  # the synced files count as the owner's uploads
    # AND once the minute has passed, the next run takes the two deferred files and leaves the rest
    with transaction() as conn:
        conn.execute("UPDATE upload_events SET accepted_at = accepted_at - interval '61 seconds' "
                     "WHERE user_id = 'pia'")
    second = b.outcomes(b.run())
    assert {k: o for k, (o, _) in second.items()} == {
        "note0.md": "unchanged", "note1.md": "unchanged", "note2.md": "unchanged", "note3.md": "new",
        "note4.md": "new"}


def test_a_listing_cut_by_the_runs_key_cap_removes_nothing_and_says_so(bench: Bench):
    # GIVEN five synced documents
    bench.remote.objects = {f"page{i}.md": f"# Page {i}\n\nThe page number {i}.\n".encode() for i in range(5)}
    ids = {k: d for k, (_, d) in bench.outcomes(bench.run()).items()}
    for doc_id in ids.values():
        assert doc_id is not None
        finish_indexing(doc_id)
    # WHEN a run may list only three keys
    bench.ctx.settings = bench.ctx.settings.model_copy(update={"sync_max_keys_per_run": 3})
    cut = bench.run(finish=False)
    # THEN it lists three, the listing is not whole, reconcile removes nothing and the run says why
    assert sorted(bench.outcomes(cut)) == ["page0.md", "page1.md", "page2.md"]
    assert tasks.run_task(bench.ctx, {"task": "reconcile", "run_id": str(cut)}) == {
        "removed": 0, "skipped": "the listing was not whole"}
    assert tasks.run_task(bench.ctx, {"task": "finish", "run_id": str(cut)}) == {"status": "failed"}
    with transaction() as conn:
        run = runs.get(conn, cut)
        kept = [doc_repo.get(conn, d) for d in ids.values() if d is not None]
    assert run is not None and run.listing_complete is False and run.files_listed == 3
    assert run.error == ("The listing was cut at 3 files, the most one run lists (SYNC_MAX_KEYS_PER_RUN): those "
                         "were synced and nothing was removed. Narrow the source's prefix, or split it into "
                         "several sources.")
    assert len(kept) == 5 and all(d is not None for d in kept)  # page3 and page4 were not listed, and stay


class CursorConnector(MemoryConnector):
    """A connector with a cursor (a delta link, a commit id): it says what it would keep, and "nothing
    changed" when the kept cursor is the remote's current one."""

    def __init__(self, objects: dict[str, bytes]) -> None:
        super().__init__(objects)
        self.version = "v1"
        self.kept: dict[str, Any] = {}

    def list_files(self, limit: int | None = None) -> Any:
        if self.kept.get("version") == self.version:
            return RemoteListing([], complete=True, state={"version": self.version}, unchanged=True)
        listing = super().list_files(limit)
        listing.state = {"version": self.version}
        return listing


def _kept(source_id: uuid.UUID) -> dict[str, Any]:
    with transaction() as conn:
        source = sources.get(conn, source_id)
    assert source is not None
    return source.connector_state


def _run_to_the_end(bench: Bench) -> uuid.UUID:
    run_id = bench.run(finish=False)
    for _, doc_id in bench.outcomes(run_id).values():
        if doc_id is not None:
            finish_indexing(doc_id)
    assert tasks.run_task(bench.ctx, {"task": "await", "run_id": str(run_id)})["pending"] == 0
    tasks.run_task(bench.ctx, {"task": "reconcile", "run_id": str(run_id)})
    tasks.run_task(bench.ctx, {"task": "finish", "run_id": str(run_id)})
    return run_id


def test_a_connectors_cursor_is_kept_only_after_a_run_that_ingested_everything(bucket: Bucket, db_url):
    bench = make_bench(bucket)
    remote = CursorConnector({"guide.md": b"# Guide\n\nVersion one of the guide.\n"})
    bench.remote = remote
    bench.ctx.connectors = Opener(remote)  # type: ignore[assignment]
    # a run that leaves a file failed (here: the pipeline never finished it) keeps no cursor
    bench.run()
    assert _kept(bench.source.id) == {}
    # a run that ingested everything keeps the cursor its listing named
    _run_to_the_end(bench)
    assert _kept(bench.source.id) == {"version": "v1"}


def test_nothing_changed_lists_nothing_and_removes_nothing(bucket: Bucket, db_url):
    bench = make_bench(bucket)
    remote = CursorConnector({"guide.md": b"# Guide\n\nVersion one of the guide.\n"})
    bench.remote = remote
    bench.ctx.connectors = Opener(remote)  # type: ignore[assignment]
    first = bench.outcomes(_run_to_the_end(bench))["guide.md"][1]
    remote.kept = _kept(bench.source.id)  # what ConnectorOpener hands the connector as `state`
    run_id = bench.run(finish=False)
    assert tasks.run_task(bench.ctx, {"task": "reconcile", "run_id": str(run_id)}) == {
        "removed": 0, "skipped": "nothing changed"}
    assert tasks.run_task(bench.ctx, {"task": "finish", "run_id": str(run_id)}) == {"status": "succeeded"}
    with transaction() as conn:
        run = runs.get(conn, run_id)
        assert run is not None and run.unchanged and run.files_listed == 0 and run.files_removed == 0
        assert first is not None and doc_repo.get(conn, first) is not None


def test_changing_what_a_source_reads_forgets_its_cursor(bucket: Bucket, db_url):
    bench = make_bench(bucket)
    with transaction() as conn:
        sources.keep_connector_state(conn, bench.source.id, {"delta": "https://example.com/delta?token=1"})
        sources.update(conn, bench.source.id, {"name": "renamed"})
    assert _kept(bench.source.id) == {"delta": "https://example.com/delta?token=1"}  # a name is not what it reads
    with transaction() as conn:
        sources.update(conn, bench.source.id, {"config": {"folder": "elsewhere"}})
    assert _kept(bench.source.id) == {}
    # a cursor kept in update_only mode moved past new files that mode ignored: another mode starts afresh
    with transaction() as conn:
        sources.keep_connector_state(conn, bench.source.id, {"delta": "https://example.com/delta?token=2"})
        sources.update(conn, bench.source.id, {"sync_mode": "new_only"})
    assert _kept(bench.source.id) == {}


def test_the_opener_hands_the_connector_its_kept_state(bucket: Bucket, db_url):
    seen: dict[str, Any] = {}

    class Recording(MemoryConnector):
        CONFIG_MODEL = type("NoConfig", (BaseModel,), {})

        @classmethod
        def open(cls, config: Any, credential: str | None, **kwargs: Any) -> MemoryConnector:
            seen.update(kwargs["state"])
            return cls({})

    bench = make_bench(bucket)
    with transaction() as conn:
        sources.keep_connector_state(conn, bench.source.id, {"commit": "abc123"})
        source = sources.get(conn, bench.source.id)
    assert source is not None
    opener = ConnectorOpener(bench.ctx.settings, None)
    from sluice.sync import connectors

    connectors.CONNECTORS["memory"] = Recording
    try:
        opener.open(source, bench.kb)
        assert seen == {"commit": "abc123"}
        # full mode ingests every listed file again, so its connector lists everything: no cursor
        seen.clear()
        seen["sentinel"] = True
        opener.open(replace(source, sync_mode="full"), bench.kb)
    finally:
        del connectors.CONNECTORS["memory"]
    assert seen == {"sentinel": True}


class ContentIdConnector(MemoryConnector):
    """A connector whose change signal names the content (as git's blob id or Drive's md5Checksum do)."""

    @classmethod
    def content_id(cls, etag: str | None) -> str | None:
        return etag


GUIDE = b"# Guide\n\nVersion one of the guide.\n"


def _with_connector(bucket: Bucket, cls: type[MemoryConnector], objects: dict[str, bytes]) -> Bench:
    bench = make_bench(bucket)
    bench.remote = cls(objects)
    bench.ctx.connectors = Opener(bench.remote)  # type: ignore[assignment]
    return bench


def test_a_renamed_file_whose_signal_names_its_content_keeps_its_document_unfetched(bucket: Bucket, db_url,
                                                                                    monkeypatch):
    from sluice.sync import connectors

    monkeypatch.setitem(connectors.CONNECTORS, "memory", ContentIdConnector)
    bench = _with_connector(bucket, ContentIdConnector, {"guide.md": GUIDE, "notes.md": b"Some notes.\n"})
    first = bench.outcomes(_run_to_the_end(bench))
    guide = first["guide.md"][1]
    bench.remote.objects = {"manuals/guide-v2.md": GUIDE, "notes.md": b"Some notes.\n"}
    bench.remote.fetched.clear()
    run_id = _run_to_the_end(bench)
    assert bench.outcomes(run_id) == {"manuals/guide-v2.md": ("unchanged", guide), "notes.md": ("unchanged",
                                                                                                first["notes.md"][1])}
    assert bench.remote.fetched == []  # decided from the listing: no byte fetched, nothing handed to the pipeline
    with transaction() as conn:
        run = runs.get(conn, run_id)
        files, _ = runs.files_page(conn, run_id, limit=10, offset=0)
        assert guide is not None
        doc = doc_repo.get(conn, guide)
        held = claims.claims_at(conn, bench.source.id, bench.kb.id, ["mem://box/manuals/guide-v2.md"])
    assert run is not None and (run.files_unchanged, run.files_new, run.files_removed) == (2, 0, 0)
    assert [f.reason for f in files if f.remote_key == "manuals/guide-v2.md"] == [
        "Renamed from mem://box/guide.md: its document was kept under this address, not fetched or embedded "
        "again."]
    assert doc is not None and (doc.source_path, doc.filename) == ("mem://box/manuals/guide-v2.md", "guide-v2.md")
    assert [c.document.id for c in held["mem://box/manuals/guide-v2.md"]] == [guide]

    # a copy (the old address still listed) is a file of its own: fetched and ingested; so is a rename to
    # another kind of file (notes.md read as Markdown; notes.txt would be read as text)
    bench.remote.objects["copy.md"] = GUIDE
    bench.remote.objects["notes.txt"] = bench.remote.objects.pop("notes.md")
    outcomes = bench.outcomes(_run_to_the_end(bench))
    assert outcomes["copy.md"][0] == "new" and outcomes["copy.md"][1] != guide
    assert outcomes["notes.txt"][0] == "new" and outcomes["notes.txt"][1] != first["notes.md"][1]
    assert sorted(bench.remote.fetched) == ["copy.md", "notes.txt"]


def test_a_rename_is_fetched_again_where_the_signal_does_not_name_the_content(bucket: Bucket, db_url):
    # an ETag is an opaque token (two objects may share one without sharing bytes): no move on its word
    bench = _with_connector(bucket, MemoryConnector, {"guide.md": GUIDE})
    guide = bench.outcomes(_run_to_the_end(bench))["guide.md"][1]
    bench.remote.objects = {"manuals/guide.md": GUIDE}
    run_id = _run_to_the_end(bench)
    assert bench.remote.fetched[-1] == "manuals/guide.md"
    outcome, doc_id = bench.outcomes(run_id)["manuals/guide.md"]
    assert outcome == "new" and doc_id != guide
