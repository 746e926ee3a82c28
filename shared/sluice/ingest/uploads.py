"""Accepting an upload (``accept``), into a knowledge base or a share's private pools, as bytes or
as a presigned POST: validate everything, commit the row, then write the object. Whether it may enter
at all (the kill switch, a private pool's cap and limits) is ``sluice.admission``.

The order is the contract of R-DOC-1 and R-UP-7: nothing is stored for a request
that is refused; the row is durable before the object whose event starts
ingestion exists; a failed write deletes the object or marks the row.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sluice.access import resolve_base
from sluice.access.shared import check_recipients, check_sharer
from sluice.admission import ParameterReader, admit, check_indexing_open, pool_owners
from sluice.bases import DefaultEmbedding, recipients_base
from sluice.chunking import IngestionConfig, merge_override, parser_options
from sluice.config import IntakeSettings, ParsingSettings, UploadSettings
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
    settings: IntakeSettings
    # Reads the kill switch's SSM parameter, where the deployment names one (INDEXING_PAUSED_PARAMETER).
    read_parameter: ParameterReader | None = None


@dataclass
class Accepted:
    """An upload the service took: its row, and for a presigned upload the POST to make."""

    document: Document
    upload: dict[str, Any] | None = None
    # A shared upload (R-ACC-6): the users it was shared with.
    recipients: list[str] | None = None


def _ceiling_error(settings: UploadSettings) -> FileTooLargeError:
    return FileTooLargeError(
        f"The file is larger than the {settings.max_upload_size_mb} MB limit for knowledge-base documents.",
        details={"limit_bytes": settings.max_upload_bytes},
    )


@dataclass(frozen=True)
class IntoBase:
    """Where an upload goes: a knowledge base the caller writes (``/kb/{kb_id}/documents``, ``/uploads``)."""

    kb_id: str


@dataclass(frozen=True)
class IntoSharedPool:
    """Where an upload goes: the private pools of its recipients (``/pools/documents``, ``/pools/uploads``,
    R-ACC-6). One stored object, one row, one parse and one set of chunks, filed in the organization's
    recipients base and read by each recipient in their pool; refused whole when any pool is full or over
    a limit."""

    recipients: Sequence[str]


Destination = IntoBase | IntoSharedPool


@dataclass(frozen=True)
class FileBytes:
    """What an upload carries: the file itself, in the request (a direct upload)."""

    filename: str
    data: bytes
    fields: DocumentFields = field(default_factory=DocumentFields)


# The other payload is a ``PresignRequest`` (a ``SharePresignRequest`` for a shared pool): the name and
# size of a file that arrives later through a presigned POST, whose bytes the parse stage sniffs.
Payload = FileBytes | PresignRequest


def accept(intake: Intake, p: Principal, into: Destination, payload: Payload) -> Accepted:
    """Accept one upload, {a base, a shared pool} × {the bytes, a presigned POST}: check everything,
    commit the row (and a share's recipients), then write the object or make the POST it arrives by."""
    settings = intake.settings
    recipients = None
    if isinstance(into, IntoSharedPool):
        check_sharer(p)
        recipients = check_recipients(into.recipients, settings.pool_max_recipients)
    size = len(payload.data) if isinstance(payload, FileBytes) else payload.size
    if size is not None and size > settings.max_upload_bytes:
        raise _ceiling_error(settings)
    filename = display_name(payload.filename)
    fields = payload.fields if isinstance(payload, FileBytes) else payload
    kind: FileKind | None = None
    documents = 1
    if isinstance(payload, FileBytes):
        if isinstance(into, IntoBase):
            with intake.uow() as conn:
                # Access first: reading the bytes (an archive is walked whole) is work done only for a writer.
                resolve_base(conn, p, into.kb_id, write=True)
        kind = kb_kind(sniff(payload.data, filename), ocr=None)
        documents = documents_in(kind, payload.data, settings)
    else:
        # Only the name can be checked now; the parse stage sniffs the bytes that arrive.
        kb_family_by_name(filename, ocr=None)
    with intake.uow() as conn:
        check_indexing_open(settings, intake.read_parameter)
        kb, owners = _destination(conn, settings, p, into, recipients)
        # Last: it counts the upload in every pool it enters (all or nothing), and the transaction that
        # writes the row keeps or drops the count.
        admit(conn, owners, documents, settings, shared=recipients is not None)
        config = IngestionConfig.model_validate(kb.ingestion_config)
        _validate_override(kb, config, fields.ingestion, kind or filename)
        key = rag_key(kb.collection_name, filename)
        doc = _new_row(conn, p, kb, filename, key, fields, size, kind, members_admitted=documents - 1)
        if recipients is not None:
            assert p.org_id is not None
            recipient_repo.add(conn, doc.id, recipients, org_id=p.org_id, shared_by=p.user_id)
    if not isinstance(payload, FileBytes):
        return Accepted(doc, _presigned_post(intake, doc.id, filename), recipients=recipients)
    assert kind is not None
    try:
        intake.store.put(key, payload.data, content_type=kind.mime, metadata={"document-id": str(doc.id)})
    except Exception:
        log.exception("storing a shared upload failed" if recipients is not None else "storing an upload failed",
                      extra={"document_id": str(doc.id)})
        _mark_unstored(intake.uow, doc.id)
        raise
    return Accepted(doc, recipients=recipients)


def _destination(conn: Connection, settings: IntakeSettings, p: Principal, into: Destination,
                 recipients: list[str] | None) -> tuple[KnowledgeBase, list[str]]:
    """The base the row is filed in, and the private pools the upload enters."""
    if isinstance(into, IntoBase):
        # Share-locked (R-TD-3): a teardown of the base waits for this row to commit and deletes it with
        # the others, or this upload finds the base gone; it never files a row under a deleted base.
        kb = resolve_base(conn, p, into.kb_id, write=True, lock="share")
        if kb_repo.teardown_reserved(conn, kb.collection_name):
            raise ConflictError("This collection is being torn down; uploads to it are refused.")
        return kb, pool_owners(kb)
    assert recipients is not None
    org_id = check_sharer(p)
    default = DefaultEmbedding(settings.default_embedding_provider, settings.default_embedding_model)
    kb = recipients_base(conn, org_id, p.user_id, default)
    if kb_repo.teardown_reserved(conn, kb.collection_name):
        raise ConflictError("The shared pool is being torn down; uploads to it are refused.")
    return kb, recipients


def documents_in(kind: FileKind, data: bytes, settings: ParsingSettings) -> int:
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
             fields: DocumentFields, filesize: int | None, kind: FileKind | None, *,
             members_admitted: int = 0) -> Document:
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
        members_admitted=members_admitted,
    )


def _presigned_post(intake: Intake, doc_id: uuid.UUID, filename: str) -> dict[str, Any]:
    """The presigned POST a row's file arrives through (under incoming/); the row fails with a
    sentence if none can be made."""
    settings = intake.settings
    try:
        return intake.store.presigned_post(
            incoming_key(doc_id, filename),
            max_bytes=settings.max_upload_bytes,
            expires_in=settings.presign_expires_seconds,
            metadata={"document-id": str(doc_id)},
        )
    except Exception:
        _mark_unstored(intake.uow, doc_id)
        raise


def _mark_unstored(uow: UnitOfWork, doc_id: uuid.UUID) -> None:
    with uow() as conn:
        doc_repo.mark_failed(conn, doc_id, "The file could not be stored; upload it again.", stage="queued")
