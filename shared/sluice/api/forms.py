"""Form fields of a multipart upload as the body they stand for."""

from __future__ import annotations

import json
from typing import Any

from sluice.api.http import check_json_values, validate
from sluice.config import UploadSettings, current
from sluice.errors import FileTooLargeError, ValidationError
from sluice.ingest.uploads import DocumentFields


def document_fields(**raw: str | None) -> DocumentFields:
    """The upload's metadata fields: empty ones dropped, ``ingestion`` read as JSON, NULs refused."""
    out: dict[str, Any] = {k: v for k, v in raw.items() if v not in (None, "")}
    if "ingestion" in out:
        try:
            out["ingestion"] = json.loads(out["ingestion"])
        except (ValueError, RecursionError):
            raise ValidationError("ingestion must be a JSON object",
                                  fields={"ingestion": "Not valid JSON."}) from None
    check_json_values(out)
    return validate(DocumentFields, out)


def fit_a_direct_upload(content: bytes, *, ceiling_mb: int, presigned_route: str, larger: str = "files") -> None:
    """Refuse a file in the request over the direct-upload limit (or over the ceiling, when that is
    lower), naming the presigned route that takes ``larger`` ones up to ``ceiling_mb``."""
    limit = min(current(UploadSettings).direct_upload_max_bytes, ceiling_mb * 1024 * 1024)
    if len(content) > limit:
        raise FileTooLargeError(
            f"Direct uploads take files up to {limit // (1024 * 1024)} MB; for larger {larger} "
            f"(up to {ceiling_mb} MB) use POST {presigned_route}.",
            details={"limit_bytes": limit},
        )
