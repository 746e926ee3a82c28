"""Sync sources and their runs: connectors, sources of a base, repoint and clone, start a run,
its progress, its per-file report, and a retry of its failed files (SPEC §10)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from sluice.api.http import build_resolver, principal, respond
from sluice.api.responses import accepted, created, no_content
from sluice.api.views_sync import (
    ConnectorsOut,
    Outcome,
    SyncFilesOut,
    SyncRunOut,
    SyncRunsOut,
    SyncSourceOut,
    SyncSourcePreviewOut,
    SyncSourcesOut,
    connectors_view,
    files_view,
    preview_view,
    run_view,
    runs_view,
    source_view,
    sources_view,
)
from sluice.config.functions import SourcesFunction
from sluice.observability import http_handler
from sluice.sync import runs, sources
from sluice.wiring import sync_context

app = build_resolver()


@app.get("/rag/sync/connectors", summary="The connectors a source may use: config schema and secret kind")
def list_connectors() -> ConnectorsOut:
    principal(app)
    return connectors_view(sources.connector_catalog())


@app.post("/kb/<kb_id>/sync-sources", summary="Add a sync source to a base", responses=created(SyncSourceOut))
def create_source(kb_id: str, body: Annotated[sources.CreateSyncSource, Body()]) -> Response[SyncSourceOut]:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        source, kb = sources.create_source(conn, p, kb_id, body, settings=ctx.settings, vault=ctx.vault)
    return respond(201, source_view(source, kb))


@app.post("/kb/<kb_id>/sync-sources/preview",
          summary="What a source would do before it is saved: who reads what it ingests (R-SYNC-8)")
def preview_source(kb_id: str, body: Annotated[sources.PreviewSyncSource, Body()]) -> SyncSourcePreviewOut:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        return preview_view(sources.preview_source(conn, p, kb_id, body, settings=ctx.settings, vault=ctx.vault))


@app.get("/kb/<kb_id>/sync-sources", summary="A base's sync sources")
def list_sources(kb_id: str) -> SyncSourcesOut:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        kb, found = sources.list_sources(conn, p, kb_id)
    return sources_view(kb, found)


@app.get("/kb/<kb_id>/sync-sources/<source_id>", summary="One sync source of a base")
def get_source(kb_id: str, source_id: str) -> SyncSourceOut:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        source, kb = sources.get_source(conn, p, kb_id, source_id)
    return source_view(source, kb)


@app.patch("/kb/<kb_id>/sync-sources/<source_id>", summary="Change a source's name, config, secret, mode, schedule")
def update_source(kb_id: str, source_id: str, body: Annotated[sources.UpdateSyncSource, Body()]) -> SyncSourceOut:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        source, kb = sources.update_source(conn, p, kb_id, source_id, body, settings=ctx.settings, vault=ctx.vault)
    return source_view(source, kb)


@app.delete("/kb/<kb_id>/sync-sources/<source_id>", summary="Delete a source (its documents stay)",
            responses=no_content())
def delete_source(kb_id: str, source_id: str) -> Response[None]:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        sources.delete_source(conn, p, kb_id, source_id)
    return respond(204, None)


@app.post("/kb/<kb_id>/sync-sources/<source_id>/run", summary="Start a run of the source (one at a time)",
          responses=accepted(SyncRunOut))
def start_run(kb_id: str, source_id: str) -> Response[SyncRunOut]:
    p, ctx = principal(app), sync_context()
    run = runs.start_run(ctx, p, kb_id, source_id)
    with ctx.uow() as conn:
        state = runs.run_state(conn, run)
    return respond(202, run_view(state))


@app.get("/kb/<kb_id>/sync-sources/<source_id>/logs", summary="A source's runs, newest first")
def list_runs(kb_id: str, source_id: str, limit: Annotated[int, Query(ge=1, le=200)] = 20,
              offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0) -> SyncRunsOut:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        page = runs.list_runs(conn, p, kb_id, source_id, limit=limit, offset=offset)
    return runs_view(page)


@app.get("/rag/sync/sources/<source_id>", summary="A sync source by its id alone")
def find_source(source_id: str) -> SyncSourceOut:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        source, kb = sources.reachable_source(conn, p, source_id)
    return source_view(source, kb)


@app.patch("/rag/sync/sources/<source_id>", summary="Repoint a source at another collection you write")
def repoint_source(source_id: str, body: Annotated[sources.RepointSyncSource, Body()]) -> SyncSourceOut:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        source, kb = sources.repoint_source(conn, p, source_id, body, settings=ctx.settings, vault=ctx.vault)
    return source_view(source, kb)


@app.post("/rag/sync/sources/<source_id>/clone", summary="Copy a source to feed another base",
          responses=created(SyncSourceOut))
def clone_source(source_id: str, body: Annotated[sources.CloneSyncSource, Body()]) -> Response[SyncSourceOut]:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        source, kb = sources.clone_source(conn, p, source_id, body, settings=ctx.settings, vault=ctx.vault)
    return respond(201, source_view(source, kb))


@app.get("/rag/sync/logs/<run_id>", summary="A run: status and listed / decided / ingested counts")
def get_run(run_id: str) -> SyncRunOut:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        state = runs.get_run(conn, p, run_id)
    return run_view(state)


@app.get("/rag/sync/logs/<run_id>/files", summary="Every file a run touched, its outcome and, if failed, why")
def run_files(run_id: str, limit: Annotated[int, Query(ge=1, le=1000)] = 200,
              offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
              outcome: Annotated[Outcome | None, Query()] = None) -> SyncFilesOut:
    p, ctx = principal(app), sync_context()
    with ctx.uow() as conn:
        page = runs.run_files(conn, p, run_id, limit=limit, offset=offset, outcome=outcome)
    return files_view(page)


@app.post("/rag/sync/logs/<run_id>/retry-failed", summary="Run again exactly the files this run failed",
          responses=accepted(SyncRunOut))
def retry_failed(run_id: str) -> Response[SyncRunOut]:
    p, ctx = principal(app), sync_context()
    run = runs.retry_failed(ctx, p, run_id)
    with ctx.uow() as conn:
        state = runs.run_state(conn, run)
    return respond(202, run_view(state))


handler = http_handler(app, settings=SourcesFunction)
