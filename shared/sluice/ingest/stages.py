"""The three pipeline stages. Each reads the tracking row first and drops an event
whose attempt is stale or whose row is gone (R-DOC-7); each writes one artifact
per document attempt, only if absent, so a duplicate delivery starts nothing new.

A stage that fails on something the next delivery may not meet again (a database
blip, an S3 timeout, a provider 5xx) records the summary on the row in
``last_failure`` and raises, so the queue redelivers; after the last delivery the
DLQ handler (``on_dead_letter``) turns that summary into the row's error (R-DOC-4,
R-PARSE-5). A failure no redelivery can cure fails the row at once.
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

from sluice.access.pools import admit_unpacked
from sluice.chunking import IngestionConfig, merge_override, split_text
from sluice.config import Settings
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db.documents import Document
from sluice.embedding import EmbeddingSpec, find_model
from sluice.errors import (
    EmbeddingCallError,
    EmbeddingError,
    FileTooLargeError,
    SparseDocumentError,
    StoredFileMissingError,
    TooManyChunksError,
)
from sluice.ingest.events import ObjectEvent, ParseJob
from sluice.ingest.failures import dead_letter_summary, failure_summary, is_refusal
from sluice.ingest.uploads import UnitOfWork, _kb_kind
from sluice.parsing import ParseBudget, check_archive, extract_isolated, iter_archive_members, sniff
from sluice.parsing.archives import member_source_path
from sluice.storage import (
    ObjectStore,
    content_key,
    display_name,
    inbox_kb_id,
    incoming_document_id,
    parse_stage_key,
    rag_key,
    stage_key,
)
from sluice.vectors import store as vector_store
from sluice.vectors.store import ChunkRow

log = logging.getLogger("sluice.ingest")

# Archive members get ids derived from the archive row, its attempt and the member
# path, so a redelivered unpack opens the same rows and writes the same keys.
_MEMBER_NAMESPACE = uuid.UUID("6f1d3c52-5d0e-4c1b-9a57-3f2f0d7e9b11")


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
    """Claim the row for a stage: it must exist, be processing, and be on this attempt.

    A row that is gone was deleted while its document was indexing: an earlier
    stage may have written the parsed text after the delete removed it, so the
    stage that finds the row gone removes it (R-DOC-6). Stage artifacts expire.
    """
    with ctx.uow() as conn:
        doc = doc_repo.get(conn, doc_id, for_update=True)
        if doc is not None and doc.status == "processing" and (attempt is None or doc.attempt == attempt):
            doc_repo.update(conn, doc_id, stage=stage)
            return doc
    if doc is None:
        ctx.store.delete_many([content_key(doc_id)])
    raise StaleEvent(str(doc_id))


def fail_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int | None, stage: str,
                  exc: BaseException) -> None:
    """Mark the row ``error`` with the R-DOC-4 summary; the log keeps the exception."""
    log.warning("document failed", exc_info=None if is_refusal(exc) else exc,
                extra={"document_id": str(doc_id), "stage": stage, "error_type": type(exc).__name__})
    with ctx.uow() as conn:
        doc_repo.update(conn, doc_id, expect_attempt=attempt, status="error", stage=stage,
                        error_message=failure_summary(stage, exc), completed_at=datetime.now(UTC))


def _note_failed_delivery(ctx: StageContext, doc_id: uuid.UUID, attempt: int, stage: str,
                          exc: BaseException) -> None:
    """Keep what this delivery met for the DLQ handler; the queue will deliver again."""
    log.warning("stage delivery failed; the queue will retry it", exc_info=exc,
                extra={"document_id": str(doc_id), "stage": stage, "error_type": type(exc).__name__})
    try:
        with ctx.uow() as conn:
            doc_repo.update(conn, doc_id, expect_attempt=attempt, last_failure=failure_summary(stage, exc))
    except Exception:
        log.exception("could not record a failed delivery", extra={"document_id": str(doc_id)})


# --- parse -------------------------------------------------------------------------------------

def on_ingest_item(ctx: StageContext, item: ObjectEvent | ParseJob) -> None:
    """One item of the ingest queue: an upload, an inbox drop or removal, or a retry's job."""
    if isinstance(item, ParseJob):
        parse_document(ctx, item.document_id, item.attempt)
    elif item.key.startswith("inbox/"):
        on_inbox_event(ctx, item)
    elif item.key.startswith("incoming/"):
        if item.created:
            on_upload_arrived(ctx, item.key)
    elif item.created:
        on_object_created(ctx, item.key)


def on_upload_arrived(ctx: StageContext, key: str) -> None:
    """A presigned POST landed: the first arrival becomes the document's stored original.

    The POST's fields stay valid until they expire, so the same upload can arrive
    again, even after indexing. Only an arrival for a document still waiting for
    its file is moved to the storage key (whose own event then parses it); any
    other is deleted, so what is served and re-read is always what was indexed.
    """
    doc_id = incoming_document_id(key)
    with ctx.uow() as conn:
        doc = doc_repo.get(conn, doc_id) if doc_id is not None else None
    arrived = ctx.store.head(key)
    if arrived is None:
        return  # a redelivery of an arrival already handled
    if doc is None or doc.storage_path is None or not _awaits_file(ctx, doc, doc.storage_path):
        log.warning("deleting an upload no document awaits", extra={"document_id": str(doc_id)})
    elif arrived.size > ctx.settings.max_upload_bytes:
        # S3 enforces the POST policy's size range; a store that does not (moto) is caught here.
        fail_document(ctx, doc.id, 1, "queued", _too_large(ctx.settings))
    else:
        ctx.store.copy(key, doc.storage_path, metadata={"document-id": str(doc.id)})
    ctx.store.delete(key)


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
    # The object's own event always starts the first attempt: a retry sends its own
    # job, so a late copy of this event must not run inside the retry's attempt.
    parse_document(ctx, doc.id, 1)


def parse_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int) -> None:
    try:
        doc = _current(ctx, doc_id, attempt, "parsing")
    except StaleEvent:
        return
    try:
        _parse(ctx, doc, attempt)
    except Exception as exc:
        if not is_refusal(exc):
            _note_failed_delivery(ctx, doc_id, attempt, "parsing", exc)
            raise
        fail_document(ctx, doc_id, attempt, "parsing", exc)
        # A refused upload is not kept: the row says why (R-UP-2). A missing one has nothing to delete,
        # and an inbox object is the caller's own, not ours to remove.
        if doc.storage_path and doc.source != "s3_drop" and not isinstance(exc, StoredFileMissingError):
            ctx.store.delete(doc.storage_path)


def _awaits_file(ctx: StageContext, doc: Document, storage_path: str) -> bool:
    """Whether a document is still waiting for its presigned upload to arrive."""
    return (doc.status == "processing" and doc.attempt == 1 and doc.stage == "queued"
            and ctx.store.head(storage_path) is None)


def _too_large(settings: Settings) -> FileTooLargeError:
    return FileTooLargeError(
        f"The file is larger than the {settings.max_upload_size_mb} MB limit for knowledge-base documents."
    )


def _parse(ctx: StageContext, doc: Document, attempt: int) -> None:
    if doc.storage_path is None:
        raise StoredFileMissingError("The document has no stored file to read; upload it again.")
    data, size = ctx.store.get_limited(doc.storage_path, ctx.settings.max_upload_bytes)
    if size > ctx.settings.max_upload_bytes:
        raise _too_large(ctx.settings)
    kind = _kb_kind(sniff(data, doc.filename))
    with ctx.uow() as conn:
        if not doc_repo.update(conn, doc.id, expect_attempt=attempt, filetype=kind.mime, filesize=size,
                               content_hash=hashlib.sha256(data).hexdigest()):
            return
    if kind.family == "archive":
        _unpack_archive(ctx, doc, attempt, data, kind)
        return
    parsed = extract_isolated(data, kind, ctx.budget)
    artifact = {
        "document_id": str(doc.id),
        "attempt": attempt,
        "mime": kind.mime,
        "kind": kind.kind,
        "text": parsed.text,
        "pages": [[p.number, p.start, p.end] for p in parsed.pages] if parsed.pages else None,
        "notes": parsed.notes,
        "truncated": parsed.truncated,
        "word_count": parsed.word_count,
    }
    # The readable copy outlives the stage artifact, which a lifecycle rule expires.
    ctx.store.put(content_key(doc.id), parsed.text.encode(), content_type="text/plain; charset=utf-8")
    ctx.store.put(stage_key("parsed", doc.id, attempt), json.dumps(artifact).encode(),
                  content_type="application/json", only_if_absent=True)


def _unpack_archive(ctx: StageContext, doc: Document, attempt: int, data: bytes, kind: Any) -> None:
    """An archive in a base becomes one document per supported member (R-ARC-2).

    Each member's row is committed before its object is written, like an upload's;
    the object's own event then parses it. The archive's row is done once every
    member is handed over: its text is the list of members, skipped ones with why.
    """
    members = check_archive(data, kind, ctx.budget)  # a presigned archive was never checked at upload
    child_ids = [_member_id(doc.id, attempt, m.path) for m in members
                 if m.kind is not None and m.skipped_reason is None]
    with ctx.uow() as conn:
        kb = kb_repo.get(conn, doc.kb_id) if doc.kb_id else None
        if kb is None:
            return
        # A redelivered unpack finds some members already written: only the new ones need room.
        admit_unpacked(conn, kb, len(child_ids) - doc_repo.count_existing(conn, child_ids), ctx.settings)
    archive_path = doc.source_path or doc.filename
    unpacked: set[str] = set()
    for member, content in iter_archive_members(data, kind, ctx.budget):
        child_id = _member_id(doc.id, attempt, member.path)
        name = display_name(member.path)
        key = rag_key(kb.collection_name, name, object_id=child_id)
        source_path = member_source_path(archive_path, member.path)
        unpacked.add(source_path)
        with ctx.uow() as conn:
            doc_repo.insert_if_absent(
                conn, id=child_id, kb_id=kb.id, org_id=kb.org_id, collection_name=kb.collection_name,
                filename=name, filesize=len(content), storage_path=key, source=doc.source,
                source_path=source_path,
                organizational_unit=doc.organizational_unit, document_type=doc.document_type,
                document_date=doc.document_date, uploaded_by=doc.uploaded_by,
                ingestion_override=doc.ingestion_override,
            )
        ctx.store.put(key, content, content_type=member.kind.mime if member.kind else "application/octet-stream",
                      metadata={"document-id": str(child_id)}, only_if_absent=True)
    listing = [f"{m.path}" + (f" (skipped: {m.skipped_reason})" if m.skipped_reason else "") for m in members]
    ctx.store.put(content_key(doc.id), "\n".join(listing).encode(), content_type="text/plain; charset=utf-8")
    with ctx.uow() as conn:
        current = doc_repo.get(conn, doc.id, for_update=True)
        if current is None or current.status != "processing" or current.attempt != attempt:
            return
        retired = _retire_replaced(conn, current)
        retired += _retire_absent_members(conn, current, retired, unpacked)
        doc_repo.update(conn, doc.id, status="done", stage="done", chunk_count=0, error_message=None,
                        last_failure=None, completed_at=datetime.now(UTC))
    for row in retired:
        _forget_objects(ctx, row, keep=doc.storage_path)


def _member_id(archive_id: uuid.UUID, attempt: int, member_path: str) -> uuid.UUID:
    return uuid.uuid5(_MEMBER_NAMESPACE, f"{archive_id}:{attempt}:{member_path}")


def _retire_absent_members(conn: Any, archive: Document, replaced: list[Document],
                           unpacked: set[str]) -> list[Document]:
    """The members of the archives ``archive`` replaces that it no longer holds: gone with them.

    A member it still holds stays searchable until its own replacement is done (R-DOC-6).
    """
    gone: list[Document] = []
    for old in replaced:
        if old.kb_id is None:
            continue
        for member in doc_repo.archive_members(conn, old.kb_id, old.source_path or old.filename,
                                               created_before=archive.created_at):
            if member.source_path not in unpacked:
                _delete_row_and_chunks(conn, member)
                gone.append(member)
    return gone


# --- S3 drops (R-UP-3) -------------------------------------------------------------------------

def _sequencer_key(sequencer: str) -> str:
    # S3 sequencers compare as hex strings of equal length, not as written.
    return sequencer.upper().rjust(32, "0")


def _older_than(event: ObjectEvent, doc: Document) -> bool:
    if not event.sequencer or not doc.source_sequencer:
        return False
    return _sequencer_key(event.sequencer) < _sequencer_key(doc.source_sequencer)


def on_inbox_event(ctx: StageContext, event: ObjectEvent) -> None:
    """``inbox/<kb_id>/<path>``: a write opens (or replaces) the document, a removal deletes it.

    Events arrive at least once and in any order. What decides is the object as it
    is now, read inside the address lock: an event whose ETag is not the current
    object's (or a creation of an object gone since, or a removal of one present
    again) is stale and changes nothing; where S3 sends a sequencer, an event
    older than the row's is stale too. A duplicate of the current content finds a
    row with its ETag and changes nothing.
    """
    kb_id = inbox_kb_id(event.key)
    if kb_id is None:
        log.warning("ignoring an inbox object outside inbox/<kb_id>/<path>", extra={"key_prefix": "inbox"})
        return
    source_path = f"s3://{ctx.store.bucket}/{event.key}"
    current = ctx.store.head(event.key)
    opened: Document | None = None
    removed: list[Document] = []
    with ctx.uow() as conn:
        kb = kb_repo.get(conn, kb_id)
        if kb is None:
            log.warning("ignoring an inbox object for a base that does not exist", extra={"kb_id": str(kb_id)})
            return
        doc_repo.lock_address(conn, kb_id, source_path)
        rows = doc_repo.by_address(conn, kb_id, source_path)
        latest = rows[0] if rows else None
        if latest is not None and _older_than(event, latest):
            return
        if not event.created:
            if current is not None:
                return  # written again since; that write's event decides
            # an archive's members go with it (R-ARC-2)
            removed = rows + doc_repo.archive_members(conn, kb_id, source_path)
            for row in removed:
                _delete_row_and_chunks(conn, row)
        else:
            etag = (event.etag or "").strip('"')
            if current is None or (etag and current.etag != etag):
                return  # overwritten or removed since; a later event carries the current state
            if latest is not None and latest.source_etag == current.etag:
                return  # this content already has its row
            for row in rows:
                if row.status == "processing":
                    # Superseded before it finished: it has no chunks, and its stages will find no row.
                    _delete_row_and_chunks(conn, row)
            opened = doc_repo.insert(
                conn, kb_id=kb.id, org_id=kb.org_id, collection_name=kb.collection_name,
                filename=display_name(event.key), filesize=current.size, storage_path=event.key,
                source="s3_drop", source_path=source_path, source_etag=current.etag,
                source_sequencer=event.sequencer,
                replaces_document_id=next((r.id for r in rows if r.status != "processing"), None),
            )
    for row in removed:
        _forget_objects(ctx, row, keep=event.key)
    if opened is not None:
        parse_document(ctx, opened.id, opened.attempt)


def _delete_row_and_chunks(conn: Any, row: Document) -> None:
    doc_repo.get(conn, row.id, for_update=True)
    vector_store.delete_document_chunks(conn, row.collection_name, row.vector_document_id or row.id)
    doc_repo.delete(conn, row.id)


def _forget_objects(ctx: StageContext, row: Document, *, keep: str | None = None) -> None:
    """Delete what Sluice stored for a row that is gone: its copy of the file and its text."""
    keys = [content_key(row.id)]
    if row.storage_path and row.storage_path != keep:
        keys.append(row.storage_path)
    try:
        ctx.store.delete_many(keys)
    except Exception:
        # The row and its chunks are gone already; a leftover object is logged, not a failure.
        log.exception("could not delete the objects of a removed document", extra={"document_id": str(row.id)})


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
        if len(chunks) > ctx.settings.max_chunks_per_document:
            raise TooManyChunksError(
                f"This document would be split into {len(chunks):,} chunks, more than the "
                f"{ctx.settings.max_chunks_per_document:,} one document may have; raise the chunk size "
                f"(now {plan.chunk_size}) or split the document."
            )
    except StaleEvent:
        return
    except Exception as exc:
        if not is_refusal(exc):
            _note_failed_delivery(ctx, doc_id, attempt, "chunking", exc)
            raise
        fail_document(ctx, doc_id, attempt, "chunking", exc)
        return
    header = {"mime": artifact["mime"], "count": len(chunks), "strategy": plan.strategy,
              "chunk_size": plan.chunk_size, "chunk_overlap": plan.chunk_overlap}
    lines = [json.dumps(header)] + [json.dumps(asdict(c)) for c in chunks]
    ctx.store.put(stage_key("chunks", doc_id, attempt), "\n".join(lines).encode(),
                  content_type="application/x-ndjson", only_if_absent=True)


# --- embed -------------------------------------------------------------------------------------

def embed_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int) -> None:
    try:
        doc = _current(ctx, doc_id, attempt, "embedding")
    except StaleEvent:
        return
    try:
        lines = ctx.store.get(stage_key("chunks", doc_id, attempt)).decode().splitlines()
        header, chunks = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
        with ctx.uow() as conn:
            kb = kb_repo.get(conn, doc.kb_id) if doc.kb_id else None
        if kb is None:
            return
        spec = EmbeddingSpec(provider=kb.embedding_provider, model=kb.embedding_model, dim=kb.embedding_dim,
                             base_url=kb.embedding_base_url, secret_id=kb.embedding_secret_id)
        vectors = _embed_with_progress(ctx, doc_id, attempt, spec, [c["content"] for c in chunks])
    except StaleEvent:
        return
    except Exception as exc:
        if _is_final(exc):
            fail_document(ctx, doc_id, attempt, "embedding", exc)
            return
        _note_failed_delivery(ctx, doc_id, attempt, "embedding", exc)
        raise
    rows = [
        ChunkRow(
            document_id=doc_id, kb_id=kb.id, org_id=kb.org_id, chunk_index=c["index"], content=c["content"],
            embedding=v, page_start=c.get("page_start"), page_end=c.get("page_end"), source=doc.source,
            document_type=doc.document_type, organizational_unit=doc.organizational_unit,
            document_date=doc.document_date, source_path=doc.source_path, filename=doc.filename,
            content_hash=doc.content_hash,
            metadata={"mime": header.get("mime"), "char_start": c.get("char_start"), "char_end": c.get("char_end"),
                      "strategy": header.get("strategy")},
        )
        for c, v in zip(chunks, vectors, strict=True)
    ]
    try:
        retired = store_chunks(ctx, doc_id, attempt, kb.id, kb.collection_name, kb.embedding_dim, rows)
    except Exception as exc:
        _note_failed_delivery(ctx, doc_id, attempt, "storing", exc)
        raise
    for row in retired or []:
        _forget_objects(ctx, row, keep=doc.storage_path)


def _is_final(exc: BaseException) -> bool:
    """A refusal fails the document now; a transient provider failure goes back to the queue."""
    if isinstance(exc, EmbeddingCallError):
        return not exc.transient
    return is_refusal(exc) or isinstance(exc, EmbeddingError)


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
                 dim: int, rows: list[ChunkRow]) -> list[Document] | None:
    """Write a document's chunks, retire what it replaces and mark it done, in one transaction.

    The base row is share-locked first (R-TD-3): a concurrent delete of the base
    waits for this commit, or this write finds the base gone. The document row is
    locked next: a document deleted meanwhile gets no chunks (R-DOC-6). New chunks
    are inserted before old ones are deleted (R-VEC-3). Returns the retired rows,
    whose stored objects the caller deletes after the commit, or None when nothing
    was written.
    """
    with ctx.uow() as conn:
        if kb_repo.get(conn, kb_id, lock="share") is None:
            return None
        doc = doc_repo.get(conn, doc_id, for_update=True)
        if doc is None or doc.status != "processing" or doc.attempt != attempt:
            return None
        vector_store.ensure_table(conn, collection, dim)
        vector_store.replace_document_chunks(conn, collection, doc_id, rows)
        retired = _retire_replaced(conn, doc)
        doc_repo.update(conn, doc_id, status="done", stage="done", chunk_count=len(rows),
                        vector_document_id=doc_id, error_message=None, last_failure=None,
                        completed_at=datetime.now(UTC))
    return retired


def _retire_replaced(conn: Any, doc: Document) -> list[Document]:
    """Delete the rows (and chunks) a completing document replaces, in its transaction (R-DOC-6)."""
    retired = doc_repo.replaced_by(conn, doc)
    for old in retired:
        vector_store.delete_document_chunks(conn, old.collection_name, old.vector_document_id or old.id)
        doc_repo.delete(conn, old.id)
    return retired


# --- routing of stage artifacts ----------------------------------------------------------------

def on_stage_artifact(ctx: StageContext, key: str) -> None:
    ref = parse_stage_key(key)
    if ref is None:
        log.warning("ignoring an unknown stage object", extra={"key_prefix": key[:40]})
        return
    step = {"parsed": chunk_document, "chunks": embed_document}[ref.stage]
    step(ctx, ref.document_id, ref.attempt)


# --- dead letters (R-PARSE-5) ------------------------------------------------------------------

def on_dead_letter(ctx: StageContext, stage: str, item: ObjectEvent | ParseJob) -> None:
    """The last delivery of a stage message failed: the row it was for becomes ``error``.

    Only a row still processing on the message's attempt changes: a summary a
    stage already wrote is the innermost and is kept, and a message for an older
    attempt changes nothing (R-DOC-7).
    """
    target = _dead_letter_target(ctx, item)
    if target is None:
        return
    doc_id, attempt = target
    with ctx.uow() as conn:
        doc = doc_repo.get(conn, doc_id, for_update=True)
        if doc is None or doc.status != "processing" or doc.attempt != attempt:
            return
        doc_repo.update(conn, doc_id, expect_attempt=attempt, status="error",
                        error_message=doc.last_failure or dead_letter_summary(stage),
                        completed_at=datetime.now(UTC))
    log.warning("document failed after its last delivery", extra={"document_id": str(doc_id), "stage": stage})


def _dead_letter_target(ctx: StageContext, item: ObjectEvent | ParseJob) -> tuple[uuid.UUID, int] | None:
    if isinstance(item, ParseJob):
        return item.document_id, item.attempt
    ref = parse_stage_key(item.key)
    if ref is not None:
        return ref.document_id, ref.attempt
    if not item.created:
        return None
    arrived_for = incoming_document_id(item.key)
    if arrived_for is not None:
        return arrived_for, 1
    with ctx.uow() as conn:
        if item.key.startswith("inbox/"):
            kb_id = inbox_kb_id(item.key)
            if kb_id is None:
                return None
            etag = (item.etag or "").strip('"')
            rows = doc_repo.by_address(conn, kb_id, f"s3://{ctx.store.bucket}/{item.key}")
            doc = next((r for r in rows if r.source_etag == etag), None)
        else:
            doc = doc_repo.by_storage_path(conn, item.key)
    return (doc.id, 1) if doc is not None else None
