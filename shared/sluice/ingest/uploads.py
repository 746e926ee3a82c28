"""Accepting a knowledge-base upload: validate everything, commit the row, then write the object.

The order is the contract of R-DOC-1 and R-UP-7: nothing is stored for a request
that is refused; the row is durable before the object whose event starts
ingestion exists; a failed write deletes the object or marks the row.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date
from typing import Any

import psycopg
from pydantic import BaseModel, ConfigDict, Field

from sluice.access import resolve_base
from sluice.access.pools import admit_upload, check_indexing_open
from sluice.chunking import IngestionConfig, merge_override
from sluice.config import Settings
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.embedding import find_model
from sluice.errors import ConflictError, FileTooLargeError, UnsupportedTypeError
from sluice.identity import Principal
from sluice.parsing import SUPPORTED_EXTENSIONS, FileKind, ParseBudget, check_archive, sniff
from sluice.storage import ObjectStore, display_name, incoming_key, rag_key

log = logging.getLogger("sluice.ingest")

UnitOfWork = Callable[[], AbstractContextManager[psycopg.Connection]]

# Knowledge bases index text; images are for chat attachments only (SPEC §4).
KB_FAMILIES = frozenset(
    {"pdf", "docx", "doc", "spreadsheet", "presentation", "document", "email", "text", "archive"}
)


class DocumentFields(BaseModel):
    """Metadata an upload may set on its document and chunks (R-CHUNK-3)."""

    model_config = ConfigDict(extra="forbid")

    organizational_unit: str | None = Field(None, max_length=200)
    document_type: str | None = Field(None, max_length=100)
    document_date: date | None = None
    ingestion: dict[str, Any] | None = None


class PresignRequest(DocumentFields):
    filename: str = Field(min_length=1, max_length=1024)
    size: int | None = Field(None, ge=1)


@dataclass
class Accepted:
    document: Document
    upload: dict[str, Any] | None = None

    def response(self) -> dict[str, Any]:
        d = self.document
        body: dict[str, Any] = {
            "id": str(d.id),
            "status": d.status,
            "filename": d.filename,
            "collection_name": d.collection_name,
            "document_id": str(d.vector_document_id) if d.vector_document_id else None,
        }
        if self.upload is not None:
            body["upload"] = self.upload
        return body


def _ceiling_error(settings: Settings) -> FileTooLargeError:
    return FileTooLargeError(
        f"The file is larger than the {settings.max_upload_size_mb} MB limit for knowledge-base documents.",
        details={"limit_bytes": settings.max_upload_bytes},
    )


def _kb_kind(kind: FileKind) -> FileKind:
    _check_family(kind.family, kind.extension)
    return kind


def _check_family(family: str, extension: str) -> None:
    if family not in KB_FAMILIES:
        raise UnsupportedTypeError(
            f"{extension} files can be attached to a chat but not indexed in a knowledge base."
        )


def family_by_name(filename: str) -> str:
    """The family a name promises; the bytes are checked against it when they arrive."""
    lower = filename.lower()
    for ext in sorted(SUPPORTED_EXTENSIONS, key=len, reverse=True):
        if lower.endswith(ext):
            _check_family(SUPPORTED_EXTENSIONS[ext], ext)
            return SUPPORTED_EXTENSIONS[ext]
    raise UnsupportedTypeError(
        "This file type is not supported. Supported: " + ", ".join(sorted(SUPPORTED_EXTENSIONS)) + "."
    )


def _check_writable(conn: psycopg.Connection, p: Principal, kb_id: str, settings: Settings, documents: int = 1
                    ) -> tuple[KnowledgeBase, IngestionConfig]:
    check_indexing_open(settings)
    kb = resolve_base(conn, p, kb_id, write=True)
    if kb_repo.teardown_reserved(conn, kb.collection_name):
        raise ConflictError("This collection is being torn down; uploads to it are refused.")
    # Last: it counts the upload, and the transaction that writes the row keeps or drops the count.
    admit_upload(conn, p, kb, settings, documents)
    return kb, IngestionConfig.model_validate(kb.ingestion_config)


def documents_in(kind: FileKind, data: bytes, settings: Settings) -> int:
    """How many documents an upload becomes: itself, and for an archive each member it unpacks (R-ARC-2)."""
    if kind.family != "archive":
        return 1
    members = check_archive(data, kind, ParseBudget.from_settings(settings))
    return 1 + sum(1 for m in members if m.kind is not None and m.skipped_reason is None)


def _validate_override(kb: KnowledgeBase, config: IngestionConfig, override: dict[str, Any] | None) -> None:
    entry = find_model(kb.embedding_provider, kb.embedding_model, kb.embedding_dim)
    merge_override(config, override, max_input_tokens=entry.max_input_tokens)


def _new_row(conn: psycopg.Connection, p: Principal, kb: KnowledgeBase, filename: str, key: str,
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


def accept_direct_upload(
    uow: UnitOfWork, store: ObjectStore, settings: Settings, p: Principal, kb_id: str,
    filename: str, data: bytes, fields: DocumentFields,
) -> Accepted:
    if len(data) > settings.max_upload_bytes:
        raise _ceiling_error(settings)
    filename = display_name(filename)
    with uow() as conn:
        # Access first: reading the bytes (an archive is walked whole) is work done only for a writer.
        resolve_base(conn, p, kb_id, write=True)
    kind = _kb_kind(sniff(data, filename))
    documents = documents_in(kind, data, settings)
    with uow() as conn:
        kb, config = _check_writable(conn, p, kb_id, settings, documents)
        _validate_override(kb, config, fields.ingestion)
        key = rag_key(kb.collection_name, filename)
        doc = _new_row(conn, p, kb, filename, key, fields, len(data), kind)
    try:
        store.put(key, data, content_type=kind.mime, metadata={"document-id": str(doc.id)})
    except Exception:
        log.exception("storing an upload failed", extra={"document_id": str(doc.id)})
        _mark_unstored(uow, doc.id)
        raise
    return Accepted(doc)


def accept_presigned_upload(
    uow: UnitOfWork, store: ObjectStore, settings: Settings, p: Principal, kb_id: str, req: PresignRequest,
) -> Accepted:
    if req.size is not None and req.size > settings.max_upload_bytes:
        raise _ceiling_error(settings)
    req = req.model_copy(update={"filename": display_name(req.filename)})
    # Only the name can be checked now; the parse stage sniffs the bytes that arrive.
    family_by_name(req.filename)
    with uow() as conn:
        kb, config = _check_writable(conn, p, kb_id, settings)
        _validate_override(kb, config, req.ingestion)
        key = rag_key(kb.collection_name, req.filename)
        doc = _new_row(conn, p, kb, req.filename, key, req, req.size, None)
    try:
        upload = store.presigned_post(
            incoming_key(doc.id, req.filename),
            max_bytes=settings.max_upload_bytes,
            expires_in=settings.presign_expires_seconds,
            metadata={"document-id": str(doc.id)},
        )
    except Exception:
        _mark_unstored(uow, doc.id)
        raise
    return Accepted(doc, upload)


def _mark_unstored(uow: UnitOfWork, doc_id: uuid.UUID) -> None:
    with uow() as conn:
        doc_repo.update(
            conn, doc_id, status="error", stage="queued",
            error_message="The file could not be stored; upload it again.",
        )

