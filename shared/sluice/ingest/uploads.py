"""Accepting a knowledge-base upload: validate everything, commit the row, then write the object.

The order is the contract of R-DOC-1 and R-UP-7: nothing is stored for a request
that is refused; the row is durable before the object whose event starts
ingestion exists; a failed write deletes the object or marks the row.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sluice.access import resolve_base
from sluice.access.bases import DefaultEmbedding
from sluice.access.shared import check_recipients, check_sharer, recipients_base
from sluice.admission import ParameterReader, admit, check_indexing_open, pool_owners
from sluice.chunking import IngestionConfig, merge_override, parser_options
from sluice.config import Settings
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db import recipients as recipient_repo
from sluice.db.connection import Connection, UnitOfWork
from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.errors import ConflictError, FileTooLargeError
from sluice.identity import Principal
from sluice.ingest.families import kb_family_by_name, kb_kind
from sluice.parsing import FileKind, ParseBudget, check_archive, sniff
from sluice.storage import ObjectStore, display_name, incoming_key, rag_key

log = logging.getLogger("sluice.ingest")


class DocumentFields(BaseModel):
    """Metadata an upload may set on its document and chunks (R-CHUNK-3)."""

    model_config = ConfigDict(extra="forbid")

    organizational_unit: str | None = Field(None, max_length=200)
    document_type: str | None = Field(None, max_length=100)
    document_date: date | None = None
    ingestion: dict[str, Any] | None = Field(
        None, description="Chunking settings for this document only: chunking_strategy, chunk_size, chunk_overlap.")


class PresignRequest(DocumentFields):
    filename: str = Field(min_length=1, max_length=1024)
    size: int | None = Field(None, ge=1, description="The file's size in bytes, when known: refused early if over.")


class SharePresignRequest(PresignRequest):
    """POST /pools/uploads: a presigned upload shared into the recipients' private pools (R-ACC-6)."""

    recipients: list[str] = Field(
        min_length=1, max_length=1000,
        description="User ids of the caller's organization (at most POOL_MAX_RECIPIENTS, default 50).")


@dataclass
class Intake:
    """What accepting an upload needs, built once per cold start by the composition root."""

    uow: UnitOfWork
    store: ObjectStore
    settings: Settings
    # Reads the kill switch's SSM parameter, where the deployment names one (INDEXING_PAUSED_PARAMETER).
    read_parameter: ParameterReader | None = None


@dataclass
class Accepted:
    """An upload the service took: its row, and for a presigned upload the POST to make."""

    document: Document
    upload: dict[str, Any] | None = None
    # A shared upload (R-ACC-6): the users it was shared with.
    recipients: list[str] | None = None


def _ceiling_error(settings: Settings) -> FileTooLargeError:
    return FileTooLargeError(
        f"The file is larger than the {settings.max_upload_size_mb} MB limit for knowledge-base documents.",
        details={"limit_bytes": settings.max_upload_bytes},
    )


def _check_writable(conn: Connection, intake: Intake, p: Principal, kb_id: str, documents: int = 1
                    ) -> tuple[KnowledgeBase, IngestionConfig]:
    settings = intake.settings
    check_indexing_open(settings, intake.read_parameter)
    # Share-locked (R-TD-3): a teardown of the base waits for this row to commit and deletes it with
    # the others, or this upload finds the base gone; it never files a row under a deleted base.
    kb = resolve_base(conn, p, kb_id, write=True, lock="share")
    if kb_repo.teardown_reserved(conn, kb.collection_name):
        raise ConflictError("This collection is being torn down; uploads to it are refused.")
    # Last: it counts the upload, and the transaction that writes the row keeps or drops the count.
    admit(conn, pool_owners(kb), documents, settings)
    return kb, IngestionConfig.model_validate(kb.ingestion_config)


def documents_in(kind: FileKind, data: bytes, settings: Settings) -> int:
    """How many documents an upload becomes: itself, and for an archive each member it unpacks (R-ARC-2)."""
    if kind.family != "archive":
        return 1
    members = check_archive(data, kind, ParseBudget.from_settings(settings))
    return 1 + sum(1 for m in members if m.kind is not None and m.skipped_reason is None)


def _validate_override(kb: KnowledgeBase, config: IngestionConfig, override: dict[str, Any] | None,
                       file: FileKind | str) -> None:
    """The override merged with the collection's config, and the file against what that config reads
    (an image is a document only with OCR on, R-PARSE-7)."""
    merge_override(config, override, max_input_tokens=kb.catalog_model().max_input_tokens)
    ocr = parser_options(config, override).ocr_on
    if isinstance(file, str):
        kb_family_by_name(file, ocr=ocr)
    else:
        kb_kind(file, ocr=ocr)


def _new_row(conn: Connection, p: Principal, kb: KnowledgeBase, filename: str, key: str,
             fields: DocumentFields, filesize: int | None, kind: FileKind | None) -> Document:
    return doc_repo.insert(
        conn,
        kb_id=kb.id,
        org_id=kb.org_id,
        collection_name=kb.collection_name,
        filename=filename,
        filesize=filesize,
        filetype=kind.mime if kind else None,
        storage_path=key,
        source="upload",
        source_path=None,
        organizational_unit=fields.organizational_unit,
        document_type=fields.document_type,
        document_date=fields.document_date,
        uploaded_by=p.user_id,
        ingestion_override=fields.ingestion,
    )


def accept_direct_upload(intake: Intake, p: Principal, kb_id: str, filename: str, data: bytes,
                         fields: DocumentFields) -> Accepted:
    uow, store, settings = intake.uow, intake.store, intake.settings
    if len(data) > settings.max_upload_bytes:
        raise _ceiling_error(settings)
    filename = display_name(filename)
    with uow() as conn:
        # Access first: reading the bytes (an archive is walked whole) is work done only for a writer.
        resolve_base(conn, p, kb_id, write=True)
    kind = kb_kind(sniff(data, filename), ocr=None)
    documents = documents_in(kind, data, settings)
    with uow() as conn:
        kb, config = _check_writable(conn, intake, p, kb_id, documents)
        _validate_override(kb, config, fields.ingestion, kind)
        key = rag_key(kb.collection_name, filename)
        doc = _new_row(conn, p, kb, filename, key, fields, len(data), kind)
    try:
        store.put(key, data, content_type=kind.mime, metadata={"document-id": str(doc.id)})
    except Exception:
        log.exception("storing an upload failed", extra={"document_id": str(doc.id)})
        _mark_unstored(uow, doc.id)
        raise
    return Accepted(doc)


def accept_presigned_upload(intake: Intake, p: Principal, kb_id: str, req: PresignRequest) -> Accepted:
    uow, store, settings = intake.uow, intake.store, intake.settings
    if req.size is not None and req.size > settings.max_upload_bytes:
        raise _ceiling_error(settings)
    req = req.model_copy(update={"filename": display_name(req.filename)})
    # Only the name can be checked now; the parse stage sniffs the bytes that arrive.
    kb_family_by_name(req.filename, ocr=None)
    with uow() as conn:
        kb, config = _check_writable(conn, intake, p, kb_id)
        _validate_override(kb, config, req.ingestion, req.filename)
        key = rag_key(kb.collection_name, req.filename)
        doc = _new_row(conn, p, kb, req.filename, key, req, req.size, None)
    upload = _presigned_post(store, settings, uow, doc.id, req.filename)
    return Accepted(doc, upload)


def _presigned_post(store: ObjectStore, settings: Settings, uow: UnitOfWork, doc_id: uuid.UUID,
                    filename: str) -> dict[str, Any]:
    """The presigned POST a row's file arrives through (under incoming/); the row fails with a
    sentence if none can be made."""
    try:
        return store.presigned_post(
            incoming_key(doc_id, filename),
            max_bytes=settings.max_upload_bytes,
            expires_in=settings.presign_expires_seconds,
            metadata={"document-id": str(doc_id)},
        )
    except Exception:
        _mark_unstored(uow, doc_id)
        raise


def _mark_unstored(uow: UnitOfWork, doc_id: uuid.UUID) -> None:
    with uow() as conn:
        doc_repo.mark_failed(conn, doc_id, "The file could not be stored; upload it again.", stage="queued")


# --- one document into several private pools (R-ACC-6) ----------------------------------------

def _check_shareable(conn: Connection, intake: Intake, p: Principal, recipients: list[str], documents: int = 1
                     ) -> tuple[KnowledgeBase, IngestionConfig]:
    settings = intake.settings
    check_indexing_open(settings, intake.read_parameter)
    org_id = check_sharer(p)
    default = DefaultEmbedding(settings.default_embedding_provider, settings.default_embedding_model)
    kb = recipients_base(conn, org_id, p.user_id, default)
    if kb_repo.teardown_reserved(conn, kb.collection_name):
        raise ConflictError("The shared pool is being torn down; uploads to it are refused.")
    # Last: it counts the upload for every recipient, all or nothing, in the transaction of the row.
    admit(conn, recipients, documents, settings, shared=True)
    return kb, IngestionConfig.model_validate(kb.ingestion_config)


def _share_row(conn: Connection, p: Principal, kb: KnowledgeBase, recipients: list[str], filename: str, key: str,
               fields: DocumentFields, filesize: int | None, kind: FileKind | None) -> Document:
    doc = _new_row(conn, p, kb, filename, key, fields, filesize, kind)
    assert p.org_id is not None
    recipient_repo.add(conn, doc.id, recipients, org_id=p.org_id, shared_by=p.user_id)
    return doc


def accept_shared_upload(intake: Intake, p: Principal, recipients: list[str], filename: str, data: bytes,
                         fields: DocumentFields) -> Accepted:
    """POST /pools/documents: one stored object, one row, one parse and one set of chunks, read by each
    recipient in their private pool. Refused whole when any recipient's pool is full or over a limit."""
    uow, store, settings = intake.uow, intake.store, intake.settings
    check_sharer(p)
    users = check_recipients(recipients, settings.pool_max_recipients)
    if len(data) > settings.max_upload_bytes:
        raise _ceiling_error(settings)
    filename = display_name(filename)
    kind = kb_kind(sniff(data, filename), ocr=None)
    documents = documents_in(kind, data, settings)
    with uow() as conn:
        kb, config = _check_shareable(conn, intake, p, users, documents)
        _validate_override(kb, config, fields.ingestion, kind)
        key = rag_key(kb.collection_name, filename)
        doc = _share_row(conn, p, kb, users, filename, key, fields, len(data), kind)
    try:
        store.put(key, data, content_type=kind.mime, metadata={"document-id": str(doc.id)})
    except Exception:
        log.exception("storing a shared upload failed", extra={"document_id": str(doc.id)})
        _mark_unstored(uow, doc.id)
        raise
    return Accepted(doc, recipients=users)


def accept_shared_presigned(intake: Intake, p: Principal, req: SharePresignRequest) -> Accepted:
    """POST /pools/uploads: the presigned variant; the parse stage sniffs what arrives, as for any upload."""
    uow, store, settings = intake.uow, intake.store, intake.settings
    check_sharer(p)
    users = check_recipients(req.recipients, settings.pool_max_recipients)
    if req.size is not None and req.size > settings.max_upload_bytes:
        raise _ceiling_error(settings)
    req = req.model_copy(update={"filename": display_name(req.filename)})
    kb_family_by_name(req.filename, ocr=None)
    with uow() as conn:
        kb, config = _check_shareable(conn, intake, p, users)
        _validate_override(kb, config, req.ingestion, req.filename)
        key = rag_key(kb.collection_name, req.filename)
        doc = _share_row(conn, p, kb, users, req.filename, key, req, req.size, None)
    upload = _presigned_post(store, settings, uow, doc.id, req.filename)
    return Accepted(doc, upload, recipients=users)
