"""Response bodies of the sync routes, and how sources, runs and file outcomes become them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from sluice.api.views import Body
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.db.sync_runs import RunFile
from sluice.db.sync_sources import SyncSource
from sluice.sync.runs import FilePage, RunPage, RunState
from sluice.sync.sources import ConnectorInfo, Preview

Outcome = Literal["new", "updated", "unchanged", "ignored", "failed", "removed"]


class ConnectorOut(Body):
    connector: str
    title: str
    secret_kind: str | None = Field(description="The kind of vault secret a source names in secret_id (its "
                                                "sluice:provider tag), or null for none.")
    config_schema: dict[str, Any] = Field(description="The JSON schema of the connector's config.")
    change_signal: str = Field(description="What tells a run a file changed before it is fetched.")


class ConnectorsOut(Body):
    connectors: list[ConnectorOut]


def connectors_view(found: list[ConnectorInfo]) -> ConnectorsOut:
    return ConnectorsOut(connectors=[
        ConnectorOut(connector=c.connector, title=c.title, secret_kind=c.secret_kind, config_schema=c.config_schema,
                     change_signal=c.change_signal) for c in found])


class SyncSourceOut(Body):
    id: str
    kb_id: str
    collection_name: str
    name: str
    connector: str
    config: dict[str, Any]
    secret_id: str | None
    sync_mode: Literal["new_only", "update_only", "full"]
    organizational_unit: str | None
    schedule: str | None
    created_by: str
    created_at: datetime | None
    updated_at: datetime | None


class SyncSourcesOut(Body):
    kb_id: str
    sources: list[SyncSourceOut]


def source_view(source: SyncSource, kb: KnowledgeBase) -> SyncSourceOut:
    return SyncSourceOut(
        id=str(source.id), kb_id=str(source.kb_id), collection_name=kb.collection_name, name=source.name,
        connector=source.connector, config=source.config, secret_id=source.secret_id,
        sync_mode=source.sync_mode,  # the table's CHECK holds it to the three
        organizational_unit=source.organizational_unit, schedule=source.schedule, created_by=source.created_by,
        created_at=source.created_at, updated_at=source.updated_at)


def sources_view(kb: KnowledgeBase, found: list[SyncSource]) -> SyncSourcesOut:
    return SyncSourcesOut(kb_id=str(kb.id), sources=[source_view(s, kb) for s in found])


class RunCountsOut(Body):
    listed: int = Field(description="Files the listing named (for a retry: the failed files it retries).")
    decided: int = Field(description="Files whose outcome is decided.")
    ingested: int = Field(description="New and updated files the pipeline has finished indexing.")
    indexing: int = Field(description="New and updated files the pipeline is still indexing.")
    new: int
    updated: int
    unchanged: int
    ignored: int
    skipped: int = Field(description="unchanged + ignored: files left as they were.")
    failed: int
    removed: int


class SyncRunOut(Body):
    id: str
    source_id: str
    kb_id: str
    collection_name: str
    connector: str
    sync_mode: str
    trigger: Literal["manual", "schedule", "retry"]
    retry_of: str | None
    status: Literal["queued", "running", "succeeded", "failed"]
    listing_complete: bool | None = Field(description="Whether the listing was whole; a run removes nothing "
                                                      "otherwise.")
    counts: RunCountsOut
    nothing_changed: bool = Field(description="The source answered that nothing changed since the state its last "
                                              "successful run kept (an unchanged git ref, in one request): nothing "
                                              "was listed, fetched or removed, and the zero counts say so.")
    note: str | None = Field(description="The run in words where its counts alone would mislead (\"Nothing "
                                          "changed since the last successful run: ...\"); null otherwise.")
    error: str | None = Field(description="Why the run failed, when it did.")
    requests_made: int | None = Field(None, description="Requests the run made to the remote side (the web "
                                                        "connector's crawl and fetches); null where not counted.")
    bytes_downloaded: int | None = Field(None, description="Body bytes the run received from the remote side, as "
                                                           "sent (a 304 adds none); null where not counted.")
    started_by: str
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    files_expired_at: datetime | None = Field(
        None, description="When the retention sweep removed this run's file list (its counts stay); null: kept.")


def run_view(state: RunState) -> SyncRunOut:
    r, p = state.run, state.progress
    return SyncRunOut(
        id=str(r.id), source_id=str(r.source_id), kb_id=str(r.kb_id), collection_name=r.collection_name,
        connector=r.connector, sync_mode=r.sync_mode,
        trigger=r.trigger, status=r.status,  # held by the table's CHECKs
        retry_of=str(r.retry_of) if r.retry_of else None, listing_complete=r.listing_complete,
        counts=RunCountsOut(listed=p.listed, decided=p.decided, ingested=p.ingested, indexing=p.pending, new=p.new,
                            updated=p.updated, unchanged=p.unchanged, ignored=p.ignored,
                            skipped=p.unchanged + p.ignored, failed=p.failed, removed=p.removed),
        nothing_changed=r.unchanged, note=state.note, error=r.error, requests_made=r.requests_made,
        bytes_downloaded=r.bytes_downloaded, started_by=r.started_by, created_at=r.created_at,
        started_at=r.started_at, finished_at=r.finished_at, files_expired_at=r.files_expired_at)


class SyncRunsOut(Body):
    runs: list[SyncRunOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


def runs_view(page: RunPage) -> SyncRunsOut:
    nxt = page.offset + page.limit if page.offset + page.limit < page.total else None
    return SyncRunsOut(runs=[run_view(s) for s in page.runs], total=page.total, limit=page.limit,
                       offset=page.offset, next_offset=nxt)


class SyncFileOut(Body):
    seq: int
    source_path: str
    name: str
    size: int | None
    change_token: str | None = Field(description="The change signal the listing gave (an S3 ETag): opaque.")
    outcome: Outcome | None = Field(description="null until the file is decided.")
    indexing: bool = Field(description="Handed to the pipeline and not indexed yet.")
    reason: str | None = Field(description="For a failed or ignored file, why.")
    document_id: str | None
    decided_at: datetime | None


class SyncFilesOut(Body):
    run_id: str
    files: list[SyncFileOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None
    note: str | None = Field(None, description="Why there are no files to show: the run's list expired.")


def file_view(f: RunFile) -> SyncFileOut:
    return SyncFileOut(seq=f.seq, source_path=f.source_path, name=f.name, size=f.size, change_token=f.etag,
                       outcome=f.outcome, indexing=f.pending,
                       reason=f.reason, document_id=str(f.document_id) if f.document_id else None,
                       decided_at=f.decided_at)


def files_view(page: FilePage) -> SyncFilesOut:
    nxt = page.offset + page.limit if page.offset + page.limit < page.total else None
    return SyncFilesOut(run_id=str(page.run_id), files=[file_view(f) for f in page.files], total=page.total,
                        limit=page.limit, offset=page.offset, next_offset=nxt, note=page.note)


class SyncSourcePreviewOut(Body):
    sentence: str = Field(description="Who could search what the source would ingest, and with what credential "
                                      "(R-SYNC-8); a secret is named only when the caller may use it.")
    refusals: dict[str, str] = Field(description="What creating the same source would refuse, by field "
                                                 "(config.<field>, secret_id); empty: nothing.")


def preview_view(preview: Preview) -> SyncSourcePreviewOut:
    return SyncSourcePreviewOut(sentence=preview.sentence, refusals=preview.refusals)
