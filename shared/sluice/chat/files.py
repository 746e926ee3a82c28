"""A chat file from upload to deletion (R-CHAT-1, R-UP-1..7, R-ARC-1, R-PARSE-4, R-ACC-4).

Validate (the ceiling, then the type by content and name), classify (the family is
the file type), parse (images are not parsed; an archive's text is its member list),
store under ``chat/<user>/…`` with SSE-KMS, record a ``chat_files`` row. A file no
parser could read is still stored, with a null preview and the reason; a file that
is not what its name says, or an unsafe archive, is refused and nothing is stored.

A presigned upload records a ``pending`` row and answers a POST to
``chat-incoming/<file>/<name>``; the worker checks the first arrival exactly as a
direct upload is checked and stores it, and deletes any later one (a replayed POST
never replaces a checked file).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import uuid
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sluice.chat.resources import ChatResources
from sluice.db import chat as repo
from sluice.db.chat import ChatFile
from sluice.errors import (
    ArchiveRefusedError,
    ConflictError,
    DocumentRefused,
    FileTooLargeError,
    NotFoundError,
    UnsupportedTypeError,
    ValidationError,
)
from sluice.identity import Principal
from sluice.parsing import (
    RENDERABLE,
    FileKind,
    ParseBudget,
    ParsedDocument,
    RenderedPages,
    check_archive,
    extract_isolated,
    kind_for,
    render_isolated,
    sniff,
)
from sluice.parsing.kinds import EXTENSION_KINDS, extension_of, supported_list
from sluice.storage import chat_incoming_file_id, chat_incoming_key, chat_key, display_name
from sluice.vectors import attachments as chunk_store

log = logging.getLogger("sluice.chat")

# Rendered pages: each at most this many pixels on its longer side, all together at most this many
# bytes of PNG, so the answer (base64 in JSON) stays inside a Lambda response (6 MB).
PAGE_MAX_SIDE = 1600
PAGES_MAX_BYTES = 3 * 1024 * 1024


class PresignChatFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    filename: str = Field(min_length=1, max_length=1024)
    size: int | None = Field(None, ge=1, description="The file's size in bytes, when known: refused early if over.")


@dataclass
class PresignedFile:
    file: ChatFile
    upload: dict[str, Any]


def file_not_found() -> NotFoundError:
    """Absent and another user's are one answer (R-ACC-4)."""
    return NotFoundError("File not found")


def parse_id(value: str | uuid.UUID, not_found: NotFoundError) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(value)
    except ValueError:
        raise not_found from None


def too_large(res: ChatResources) -> FileTooLargeError:
    s = res.settings
    return FileTooLargeError(f"The file is larger than the {s.chat_max_upload_size_mb} MB limit for chat files.",
                             details={"limit_bytes": s.chat_max_upload_bytes})


@dataclass
class Checked:
    """What validating, classifying and parsing one file found."""

    kind: FileKind
    parsed: ParsedDocument | None
    parse_error: str | None

    @property
    def file_type(self) -> str:
        # The classes of seed 000 are Sluice's families: image, pdf, docx, doc, spreadsheet,
        # document, presentation, email, text, archive.
        return self.kind.family

    def row_values(self) -> dict[str, Any]:
        text = self.parsed.text if self.parsed is not None and self.parsed.text.strip() else None
        pages = None
        if text is not None and self.parsed is not None and self.parsed.pages:
            pages = [[pg.number, pg.start, pg.end] for pg in self.parsed.pages]
        return {"mime_type": self.kind.mime, "file_type": self.file_type,
                "preview": self.parsed.preview if text is not None and self.parsed is not None else None,
                "parsed_content": text, "parsed_pages": pages, "parse_error": self.parse_error}


def check(data: bytes, filename: str, budget: ParseBudget) -> Checked:
    """Validate and classify ``data`` (refusals raise, nothing stored); parse it (a failure is kept)."""
    kind = sniff(data, filename)
    if kind.family == "image":
        return Checked(kind, None, None)
    if kind.family == "archive":
        check_archive(data, kind, budget)  # R-ARC-1: an unsafe archive is refused whole
    try:
        parsed = extract_isolated(data, kind, budget)
    except ArchiveRefusedError:
        if kind.family == "archive":
            raise
        return Checked(kind, None, "This file could not be read: its container breaks the archive safety limits.")
    except DocumentRefused as exc:
        return Checked(kind, None, exc.message)
    return Checked(kind, parsed, None if parsed.text.strip() else "No text could be read from this file.")


def upload(res: ChatResources, p: Principal, filename: str, data: bytes) -> ChatFile:
    """A direct upload: checked, stored, then recorded; a failure after the write deletes the object (R-UP-7)."""
    if len(data) > res.settings.chat_max_upload_bytes:
        raise too_large(res)
    filename = display_name(filename)
    # Inside the request: the parse gets less time than a worker's, below the API's 29 s.
    budget = replace(res.budget, timeout_seconds=min(res.settings.chat_parse_timeout_seconds,
                                                     res.settings.parse_timeout_seconds))
    checked = check(data, filename, budget)
    file_id = uuid.uuid4()
    key = chat_key(p.user_id, filename)
    res.store.put(key, data, content_type=checked.kind.mime, metadata=_object_metadata(file_id, data))
    try:
        with res.uow() as conn:
            return repo.insert_file(conn, id=file_id, user_id=p.user_id, filename=filename, size=len(data),
                                    storage_path=key, status="ready", **checked.row_values())
    except Exception:
        log.exception("recording a chat file failed; its object is deleted", extra={"file_id": str(file_id)})
        res.store.delete(key)
        raise


def _object_metadata(file_id: uuid.UUID, data: bytes) -> dict[str, str]:
    return {"chat-file-id": str(file_id), "sha256": hashlib.sha256(data).hexdigest()}


def kind_by_name(filename: str) -> FileKind:
    """The kind a name promises (the bytes are checked against it when they arrive)."""
    extension = extension_of(filename)
    kind = EXTENSION_KINDS.get(extension)
    if kind is None:
        named = f"{extension} files" if extension else "files without an extension"
        raise UnsupportedTypeError(f"Sluice cannot read {named}. Supported types: {supported_list()}.")
    return kind_for(kind, extension)


def presign(res: ChatResources, p: Principal, req: PresignChatFile) -> PresignedFile:
    s = res.settings
    if req.size is not None and req.size > s.chat_max_upload_bytes:
        raise too_large(res)
    filename = display_name(req.filename)
    kind = kind_by_name(filename)
    with res.uow() as conn:
        row = repo.insert_file(conn, user_id=p.user_id, filename=filename, size=req.size,
                               storage_path=chat_key(p.user_id, filename), status="pending",
                               mime_type=kind.mime, file_type=kind.family)
    try:
        post = res.store.presigned_post(chat_incoming_key(row.id, filename), max_bytes=s.chat_max_upload_bytes,
                                        expires_in=s.presign_expires_seconds,
                                        metadata={"chat-file-id": str(row.id)})
    except Exception:
        with res.uow() as conn:
            repo.update_file(conn, row.id, status="failed",
                             error_message="The upload could not be prepared; try again.")
        raise
    return PresignedFile(row, post)


def on_arrival(res: ChatResources, key: str) -> None:
    """A presigned chat upload landed: the first arrival is checked and stored; any other is deleted.

    The bytes checked are the bytes stored (read once, written with IfNoneMatch), so a second
    POST racing the first can neither replace a checked file nor slip in unchecked. A redelivery
    after the object was stored finds it there with the same hash and completes the row.
    """
    file_id = chat_incoming_file_id(key)
    arrived = res.store.head(key)
    if arrived is None:
        return  # a redelivery of an arrival already handled
    with res.uow() as conn:
        row = repo.file_by_id(conn, file_id) if file_id is not None else None
    if row is None or row.status != "pending":
        log.warning("deleting a chat upload no file awaits", extra={"file_id": str(file_id)})
    elif arrived.size > res.settings.chat_max_upload_bytes:
        _fail_file(res, row.id, too_large(res).message)
    else:
        # A failure here leaves the arrival for the redelivery; the dead-letter handler fails the row.
        _store_arrival(res, row, key)
    res.store.delete(key)


def _store_arrival(res: ChatResources, row: ChatFile, key: str) -> None:
    data, size = res.store.get_limited(key, res.settings.chat_max_upload_bytes)
    if size > res.settings.chat_max_upload_bytes:
        _fail_file(res, row.id, too_large(res).message)
        return
    try:
        checked = check(data, row.filename, res.budget)
    except DocumentRefused as exc:  # not what its name says, or an unsafe archive: nothing is kept
        _fail_file(res, row.id, exc.message)
        return
    metadata = _object_metadata(row.id, data)
    if not res.store.put(row.storage_path, data, content_type=checked.kind.mime, metadata=metadata,
                         only_if_absent=True):
        stored = res.store.head(row.storage_path)
        if stored is None or stored.metadata.get("sha256") != metadata["sha256"]:
            log.warning("a second arrival for a stored chat file is dropped", extra={"file_id": str(row.id)})
            return
    with res.uow() as conn:
        repo.update_file(conn, row.id, expect_status="pending", status="ready", size=len(data),
                         **checked.row_values())


def _fail_file(res: ChatResources, file_id: uuid.UUID, message: str) -> None:
    with res.uow() as conn:
        repo.update_file(conn, file_id, expect_status="pending", status="failed", error_message=message)


def fail_arrival(res: ChatResources, key: str, message: str) -> None:
    """The dead-letter queue's answer to an arrival that failed every delivery: the row says why,
    and the arrival is not kept."""
    file_id = chat_incoming_file_id(key)
    if file_id is not None:
        _fail_file(res, file_id, message)
    res.store.delete(key)


def get_file(res: ChatResources, p: Principal, file_id: str | uuid.UUID) -> ChatFile:
    ident = parse_id(file_id, file_not_found())
    with res.uow() as conn:
        row = repo.user_file(conn, p.user_id, ident)
    if row is None:
        raise file_not_found()
    return row


def not_stored(row: ChatFile) -> ConflictError:
    """A file whose original is not there to read: still uploading, or failed (and why)."""
    if row.status == "failed":
        return ConflictError(f"This file is not available: {row.error_message or 'its upload failed'}",
                             details={"file_id": str(row.id), "status": row.status})
    return ConflictError("The file has not finished uploading.", details={"file_id": str(row.id),
                                                                          "status": row.status})


def download_url(res: ChatResources, row: ChatFile) -> str | None:
    """A short-lived link to the stored original; None while a presigned upload has not arrived."""
    if row.status != "ready":
        return None
    return res.store.presigned_get(row.storage_path, expires_in=res.settings.download_url_expires_seconds,
                                   filename=row.filename)


def stored_keys(rows: list[ChatFile]) -> list[str]:
    """Every object a chat file has: the original and, once written, its extracted text."""
    return [k for r in rows for k in (r.storage_path, r.text_storage_path) if k]


def delete_file(res: ChatResources, p: Principal, file_id: str | uuid.UUID) -> ChatFile:
    """The row (with an attachment of it, and that attachment's chunks) in one transaction, then the objects."""
    ident = parse_id(file_id, file_not_found())
    with res.uow() as conn:
        row = repo.user_file(conn, p.user_id, ident, for_update=True)
        if row is None:
            raise file_not_found()
        attachment = repo.attachment_of_file(conn, row.id)
        if attachment is not None:
            chunk_store.delete_chunks(conn, attachment.id)
            repo.delete_attachment(conn, attachment.id)
        repo.delete_file(conn, row.id)
    res.store.delete_many(stored_keys([row]))
    return row


@dataclass
class Pages:
    file: ChatFile
    rendered: RenderedPages
    asked: int
    cap: int


def pages(res: ChatResources, p: Principal, file_id: str | uuid.UUID, asked: int | None) -> Pages:
    """A TIFF's (or a PDF's) first pages as PNG, capped by CHAT_TIFF_MAX_INLINE_PAGES."""
    row = get_file(res, p, file_id)
    if row.status != "ready":
        raise not_stored(row)
    kind = _renderable_kind(row)
    cap = res.settings.chat_tiff_max_inline_pages
    wanted = min(asked, cap) if asked is not None else cap
    data = res.store.get(row.storage_path)
    rendered = render_isolated(data, kind, res.budget, max_pages=wanted, max_side=PAGE_MAX_SIDE,
                               max_bytes=PAGES_MAX_BYTES)
    return Pages(row, rendered, asked if asked is not None else cap, cap)


def _renderable_kind(row: ChatFile) -> FileKind:
    kind = EXTENSION_KINDS.get(extension_of(row.filename))
    by_mime = {"image/tiff": "tif", "application/pdf": "pdf"}.get(row.mime_type or "")
    if by_mime is None or by_mime not in RENDERABLE or kind != by_mime:
        raise ValidationError("Pages are shown for TIFF images and PDFs only; download this file instead.",
                              fields={"file_id": f"A {row.file_type or 'file'}, not a TIFF or a PDF."})
    return kind_for(by_mime, extension_of(row.filename))


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()
