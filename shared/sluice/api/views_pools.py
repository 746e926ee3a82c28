"""Response bodies of the private-pool routes (R-ACC-5, R-ACC-6), and the multipart recipients field."""

from __future__ import annotations

import json

from pydantic import Field

from sluice.admission import PoolLimits
from sluice.api.views import (
    AcceptedOut,
    Body,
    DocumentOut,
    PresignedAcceptedOut,
    accepted_view,
    document_view,
    presigned_view,
)
from sluice.errors import ValidationError
from sluice.ingest.documents import PoolPage, Removal
from sluice.ingest.uploads import Accepted


def recipients_field(raw: str | None) -> list[str]:
    """The multipart ``recipients`` field: a JSON array of user ids, or ids separated by commas."""
    text = (raw or "").strip()
    if not text:
        raise ValidationError("Name at least one recipient", fields={"recipients": "Name at least one user id."})
    if text.startswith("["):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            raise ValidationError("recipients must be a JSON array of user ids",
                                  fields={"recipients": "Not valid JSON."}) from None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValidationError("recipients must be a JSON array of user ids",
                                  fields={"recipients": "A JSON array of strings."})
        return value
    return [part.strip() for part in text.split(",")]


class SharedAcceptedOut(AcceptedOut):
    recipients: list[str] = Field(description="Everyone the document was shared with: all of them, or the "
                                              "upload was refused (all or nothing).")


class SharedPresignedAcceptedOut(PresignedAcceptedOut):
    recipients: list[str]


def shared_accepted_view(accepted: Accepted) -> SharedAcceptedOut:
    return SharedAcceptedOut(**accepted_view(accepted).model_dump(), recipients=accepted.recipients or [])


def shared_presigned_view(accepted: Accepted) -> SharedPresignedAcceptedOut:
    return SharedPresignedAcceptedOut(**presigned_view(accepted).model_dump(), recipients=accepted.recipients or [])


class PoolDocumentOut(DocumentOut):
    shared: bool = Field(description="Whether the document was shared into this pool by someone else.")
    shared_by: str | None = Field(description="Who shared it (their user id); null for the caller's own.")


class PoolLimitsOut(Body):
    cap: int = Field(description="Documents a private pool may hold (PRIVATE_DOC_CAP): its own and those shared "
                                 "with its user.")
    held: int = Field(description="Documents it holds now; an upload or share that would pass the cap is refused.")
    upload_rate_per_minute: int = Field(description="Documents that may enter it a minute (0: no limit).")
    upload_rate_per_day: int = Field(description="Documents that may enter it a day (0: no limit).")
    max_recipients: int = Field(description="Users one document may be shared with at once.")


class PoolDocumentsOut(Body):
    documents: list[PoolDocumentOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None
    limits: PoolLimitsOut = Field(description="The caller's private pool's cap and limits (R-ACC-5).")


def pool_view(page: PoolPage, limits: PoolLimits) -> PoolDocumentsOut:
    return PoolDocumentsOut(
        documents=[PoolDocumentOut(**document_view(e.document).model_dump(), shared=e.shared_by is not None,
                                   shared_by=e.shared_by) for e in page.entries],
        total=page.total, limit=page.limit, offset=page.offset, next_offset=page.next_offset,
        limits=PoolLimitsOut(cap=limits.cap, held=limits.held, upload_rate_per_minute=limits.per_minute,
                             upload_rate_per_day=limits.per_day, max_recipients=limits.max_recipients))


class RecipientRemovedOut(Body):
    id: str
    user_id: str
    removed: bool
    document_deleted: bool = Field(description="True when that was the last recipient: the document is gone.")


def recipient_removed_view(removal: Removal, user_id: str) -> RecipientRemovedOut:
    return RecipientRemovedOut(id=str(removal.document.id), user_id=user_id, removed=True,
                               document_deleted=removal.gone)
