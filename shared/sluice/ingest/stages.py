"""The three pipeline stages. Each reads the tracking row first and drops an event
whose attempt is stale or whose row is gone (R-DOC-7); each writes one artifact
per document attempt, only if absent, so a duplicate delivery starts nothing new.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from sluice.chunking import IngestionConfig, merge_override, split_text
from sluice.config import Settings
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db.documents import Document
from sluice.embedding import EmbeddingSpec, find_model
from sluice.errors import (
    DocumentRefused,
    EmbeddingCallError,
    EmbeddingError,
    FileTooLargeError,
    SparseDocumentError,
)
from sluice.ingest.failures import failure_summary
from sluice.ingest.uploads import UnitOfWork, _kb_kind
from sluice.parsing import ParseBudget, extract_isolated, sniff
from sluice.storage import ObjectStore, parse_stage_key, stage_key
from sluice.vectors import store as vector_store
from sluice.vectors.store import ChunkRow

log = logging.getLogger("sluice.ingest")


@dataclass
class StageContext:
    """What every stage needs, built once per cold start by the handler."""

    uow: UnitOfWork
    store: ObjectStore
    settings: Settings
    embedder_for: Callable[[EmbeddingSpec], Any]

    @property
    def budget(self) -> ParseBudget:
        return ParseBudget.from_settings(self.settings)


class StaleEvent(Exception):
    """The event belongs to an attempt that is no longer current; it changes nothing."""


def _current(ctx: StageContext, doc_id: uuid.UUID, attempt: int | None, stage: str) -> Document:
    """Claim the row for a stage: it must exist, be processing, and be on this attempt."""
    with ctx.uow() as conn:
        doc = doc_repo.get(conn, doc_id, for_update=True)
        if doc is None or doc.status != "processing" or (attempt is not None and doc.attempt != attempt):
            raise StaleEvent(str(doc_id))
        doc_repo.update(conn, doc_id, stage=stage)
        return doc


def fail_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int | None, stage: str,
                  exc: BaseException) -> None:
    """Mark the row ``error`` with the R-DOC-4 summary; the log keeps the exception."""
    log.warning("document failed", exc_info=exc if not isinstance(exc, DocumentRefused) else None,
                extra={"document_id": str(doc_id), "stage": stage, "error_type": type(exc).__name__})
    with ctx.uow() as conn:
        doc_repo.update(conn, doc_id, expect_attempt=attempt, status="error",
                        error_message=failure_summary(stage, exc), completed_at=datetime.now(UTC))


# --- parse -------------------------------------------------------------------------------------

def on_object_created(ctx: StageContext, key: str) -> None:
    """An object arrived under ``rag/``: parse it for the document that expects it."""
    with ctx.uow() as conn:
        doc = doc_repo.by_storage_path(conn, key)
    if doc is None:
        # No row expects this object (its document was deleted, or the key was
        # never handed out): an object without a row would be stored forever.
        log.warning("deleting an object no document expects", extra={"key_prefix": key.split("/")[0]})
        ctx.store.delete(key)
        return
    parse_document(ctx, doc.id, doc.attempt)


def parse_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int) -> None:
    try:
        doc = _current(ctx, doc_id, attempt, "parsing")
    except StaleEvent:
        return
    assert doc.storage_path is not None
    try:
        data, size = ctx.store.get_limited(doc.storage_path, ctx.settings.max_upload_bytes)
        if size > ctx.settings.max_upload_bytes:
            raise FileTooLargeError(
                f"The file is larger than the {ctx.settings.max_upload_size_mb} MB limit "
                "for knowledge-base documents."
            )
        kind = _kb_kind(sniff(data, doc.filename))
        parsed = extract_isolated(data, kind, ctx.budget)
    except DocumentRefused as exc:
        # A refused object is not kept: the row says why (R-UP-2).
        fail_document(ctx, doc_id, attempt, "parsing", exc)
        ctx.store.delete(doc.storage_path)
        return
    artifact = {
        "document_id": str(doc_id),
        "attempt": attempt,
        "mime": kind.mime,
        "kind": kind.kind,
        "text": parsed.text,
        "pages": [[p.number, p.start, p.end] for p in parsed.pages] if parsed.pages else None,
        "notes": parsed.notes,
        "truncated": parsed.truncated,
        "word_count": parsed.word_count,
    }
    with ctx.uow() as conn:
        if not doc_repo.update(conn, doc_id, expect_attempt=attempt, filetype=kind.mime, filesize=size,
                               content_hash=hashlib.sha256(data).hexdigest()):
            return
    ctx.store.put(stage_key("parsed", doc_id, attempt), json.dumps(artifact).encode(),
                  content_type="application/json", only_if_absent=True)


# --- chunk -------------------------------------------------------------------------------------

def chunk_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int) -> None:
    try:
        doc = _current(ctx, doc_id, attempt, "chunking")
    except StaleEvent:
        return
    try:
        artifact = json.loads(ctx.store.get(stage_key("parsed", doc_id, attempt)))
        with ctx.uow() as conn:
            kb = kb_repo.get(conn, doc.kb_id) if doc.kb_id else None
        if kb is None:
            raise StaleEvent(str(doc_id))
        entry = find_model(kb.embedding_provider, kb.embedding_model, kb.embedding_dim)
        plan = merge_override(IngestionConfig.model_validate(kb.ingestion_config), doc.ingestion_override,
                              max_input_tokens=entry.max_input_tokens)
        pages = [tuple(p) for p in artifact["pages"]] if artifact.get("pages") else None
        chunks = split_text(artifact["text"], plan, pages=pages)
        if not chunks:
            raise SparseDocumentError(
                f"Document is too sparse to index ({artifact.get('word_count', 0)} words)"
            )
    except StaleEvent:
        return
    except DocumentRefused as exc:
        fail_document(ctx, doc_id, attempt, "chunking", exc)
        return
    lines = [json.dumps({"mime": artifact["mime"], "count": len(chunks)})]
    lines += [json.dumps(asdict(c)) for c in chunks]
    ctx.store.put(stage_key("chunks", doc_id, attempt), "\n".join(lines).encode(),
                  content_type="application/x-ndjson", only_if_absent=True)


# --- embed -------------------------------------------------------------------------------------

def embed_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int) -> None:
    try:
        doc = _current(ctx, doc_id, attempt, "embedding")
    except StaleEvent:
        return
    lines = ctx.store.get(stage_key("chunks", doc_id, attempt)).decode().splitlines()
    header, chunks = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    with ctx.uow() as conn:
        kb = kb_repo.get(conn, doc.kb_id) if doc.kb_id else None
    if kb is None:
        return
    spec = EmbeddingSpec(provider=kb.embedding_provider, model=kb.embedding_model, dim=kb.embedding_dim,
                         base_url=kb.embedding_base_url, secret_id=kb.embedding_secret_id)
    try:
        vectors = _embed_with_progress(ctx, doc_id, attempt, spec, [c["content"] for c in chunks])
    except StaleEvent:
        return
    except Exception as exc:
        if _is_final(exc):
            fail_document(ctx, doc_id, attempt, "embedding", exc)
            return
        raise
    rows = [
        ChunkRow(
            document_id=doc_id, kb_id=kb.id, org_id=kb.org_id, chunk_index=c["index"], content=c["content"],
            embedding=v, page_start=c.get("page_start"), page_end=c.get("page_end"), source=doc.source,
            document_type=doc.document_type, organizational_unit=doc.organizational_unit,
            document_date=doc.document_date, source_path=doc.source_path, filename=doc.filename,
            content_hash=doc.content_hash, metadata={"mime": header.get("mime")},
        )
        for c, v in zip(chunks, vectors, strict=True)
    ]
    store_chunks(ctx, doc_id, attempt, kb.id, kb.collection_name, kb.embedding_dim, rows)


def _is_final(exc: BaseException) -> bool:
    """A refusal fails the document now; a transient provider failure goes back to the queue."""
    if isinstance(exc, EmbeddingCallError):
        return not exc.transient
    return isinstance(exc, DocumentRefused | EmbeddingError)


def _embed_with_progress(ctx: StageContext, doc_id: uuid.UUID, attempt: int, spec: EmbeddingSpec,
                         texts: list[str]) -> list[list[float]]:
    embedder = ctx.embedder_for(spec)
    size = max(1, ctx.settings.embed_batch_size)
    batches = [texts[i:i + size] for i in range(0, len(texts), size)]
    out: list[list[float]] = []
    for n, batch in enumerate(batches, start=1):
        out.extend(embedder.embed_documents(batch))
        with ctx.uow() as conn:
            if not doc_repo.update(conn, doc_id, expect_attempt=attempt, stage=f"embedding {n}/{len(batches)}"):
                raise StaleEvent(str(doc_id))
    return out


def store_chunks(ctx: StageContext, doc_id: uuid.UUID, attempt: int, kb_id: uuid.UUID, collection: str,
                 dim: int, rows: list[ChunkRow]) -> bool:
    """Write a document's chunks and mark it done, in one transaction.

    The base row is share-locked first (R-TD-3): a concurrent delete of the base
    waits for this commit, or this write finds the base gone. The document row is
    locked next: a document deleted meanwhile gets no chunks (R-DOC-6).
    """
    with ctx.uow() as conn:
        if kb_repo.get(conn, kb_id, lock="share") is None:
            return False
        doc = doc_repo.get(conn, doc_id, for_update=True)
        if doc is None or doc.status != "processing" or doc.attempt != attempt:
            return False
        vector_store.ensure_table(conn, collection, dim)
        vector_store.delete_document_chunks(conn, collection, doc_id)
        vector_store.insert_chunks(conn, collection, rows)
        doc_repo.update(conn, doc_id, status="done", stage="done", chunk_count=len(rows),
                        vector_document_id=doc_id, error_message=None, completed_at=datetime.now(UTC))
    return True


# --- routing of stage artifacts ----------------------------------------------------------------

def on_stage_artifact(ctx: StageContext, key: str) -> None:
    ref = parse_stage_key(key)
    if ref is None:
        log.warning("ignoring an unknown stage object", extra={"key_prefix": key[:40]})
        return
    step = {"parsed": chunk_document, "chunks": embed_document}[ref.stage]
    step(ctx, ref.document_id, ref.attempt)
