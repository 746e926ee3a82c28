"""Form fields of a multipart upload as the body they stand for."""

from __future__ import annotations

import json
from typing import Any

from sluice.api.http import check_json_values, validate
from sluice.errors import ValidationError
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
