"""Knowledge-base uploads: direct multipart and presigned POST (R-UP-2)."""

from __future__ import annotations

from sluice.api.http import build_resolver, json_response, parse_json, principal, raw_body, validate
from sluice.api.multipart import form_fields, parse_form
from sluice.config import get_settings
from sluice.db.connection import transaction
from sluice.errors import ValidationError
from sluice.ingest.uploads import (
    DocumentFields,
    PresignRequest,
    accept_direct_upload,
    accept_presigned_upload,
)
from sluice.observability import http_handler
from sluice.wiring import stage_context

app = build_resolver()


@app.post("/kb/<kb_id>/documents")
def upload_document(kb_id: str):
    p = principal(app)
    settings = get_settings()
    limit = min(settings.direct_upload_max_bytes, settings.max_upload_bytes)
    form = parse_form(
        app.current_event.headers.get("content-type"),
        raw_body(app),
        max_file_bytes=limit,
        too_large=(f"Direct uploads take files up to {limit // (1024 * 1024)} MB; for larger files "
                   f"(up to {settings.max_upload_size_mb} MB) use POST /kb/{{kb_id}}/uploads."),
    )
    upload = form.files.get("file")
    if upload is None:
        raise ValidationError("Attach the document as the form field 'file'", fields={"file": "Required."})
    fields = validate(DocumentFields, form_fields(form.fields))
    accepted = accept_direct_upload(transaction, stage_context().store, settings, p, kb_id,
                                    upload.filename, upload.data, fields)
    return json_response(202, accepted.response())


@app.post("/kb/<kb_id>/uploads")
def presign_upload(kb_id: str):
    p = principal(app)
    req = parse_json(app, PresignRequest)
    accepted = accept_presigned_upload(transaction, stage_context().store, get_settings(), p, kb_id, req)
    return json_response(202, accepted.response())


handler = http_handler(app)
