"""Knowledge-base uploads: direct multipart and presigned POST (R-UP-2)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, File, Form, UploadFile

from sluice.api.forms import document_fields, fit_a_direct_upload
from sluice.api.http import build_resolver, principal, respond
from sluice.api.responses import accepted
from sluice.api.views import AcceptedOut, PresignedAcceptedOut, accepted_view, presigned_view
from sluice.api.views_pools import (
    SharedAcceptedOut,
    SharedPresignedAcceptedOut,
    recipients_field,
    shared_accepted_view,
    shared_presigned_view,
)
from sluice.config import current
from sluice.config.functions import UploadsFunction
from sluice.ingest.uploads import FileBytes, IntoBase, IntoSharedPool, PresignRequest, SharePresignRequest, accept
from sluice.observability import http_handler
from sluice.wiring import intake

app = build_resolver()


@app.post("/kb/<kb_id>/documents", summary="Upload a document in the request (up to the direct-upload limit)",
          responses=accepted(AcceptedOut))
def upload_document(
    kb_id: str,
    file: Annotated[UploadFile, File(description="The document.")],
    organizational_unit: Annotated[str | None, Form()] = None,
    document_type: Annotated[str | None, Form()] = None,
    document_date: Annotated[str | None, Form(description="YYYY-MM-DD")] = None,
    ingestion: Annotated[str | None, Form(description="A JSON object of chunking settings for this document.")] = None,
) -> Response[AcceptedOut]:
    p = principal(app)
    fit_a_direct_upload(file.content, ceiling_mb=current(UploadsFunction).max_upload_size_mb,
                        presigned_route="/kb/{kb_id}/uploads")
    fields = document_fields(organizational_unit=organizational_unit, document_type=document_type,
                             document_date=document_date, ingestion=ingestion)
    taken = accept(intake(), p, IntoBase(kb_id), FileBytes(file.filename or "file", file.content, fields))
    return respond(202, accepted_view(taken))


@app.post("/kb/<kb_id>/uploads", summary="Ask for a presigned POST straight to storage (up to the ceiling)",
          responses=accepted(PresignedAcceptedOut))
def presign_upload(kb_id: str, body: Annotated[PresignRequest, Body()]) -> Response[PresignedAcceptedOut]:
    p = principal(app)
    taken = accept(intake(), p, IntoBase(kb_id), body)
    return respond(202, presigned_view(taken))


_ALL_OR_NOTHING = ("Stored, parsed and embedded once; read by exactly its recipients. All or nothing: when any "
                   "recipient's pool is full the answer is 409 DOC_CAP_REACHED with details.recipients naming "
                   "each full one (429 RATE_LIMIT_EXCEEDED naming those over a limit), and nothing is written "
                   "for anyone.")


@app.post("/pools/documents", summary="Share a document into several users' private pools (R-ACC-6)",
          description=_ALL_OR_NOTHING, responses=accepted(SharedAcceptedOut))
def share_document(
    file: Annotated[UploadFile, File(description="The document.")],
    recipients: Annotated[str, Form(description="User ids of your organization: a JSON array, or separated by "
                                                "commas. All or nothing: one full pool refuses the upload.")],
    organizational_unit: Annotated[str | None, Form()] = None,
    document_type: Annotated[str | None, Form()] = None,
    document_date: Annotated[str | None, Form(description="YYYY-MM-DD")] = None,
    ingestion: Annotated[str | None, Form(description="A JSON object of chunking settings for this document.")] = None,
) -> Response[SharedAcceptedOut]:
    p = principal(app)
    fit_a_direct_upload(file.content, ceiling_mb=current(UploadsFunction).max_upload_size_mb,
                        presigned_route="/pools/uploads")
    fields = document_fields(organizational_unit=organizational_unit, document_type=document_type,
                             document_date=document_date, ingestion=ingestion)
    taken = accept(intake(), p, IntoSharedPool(recipients_field(recipients)),
                   FileBytes(file.filename or "file", file.content, fields))
    return respond(202, shared_accepted_view(taken))


@app.post("/pools/uploads", summary="A presigned POST for a document shared into several private pools",
          description=_ALL_OR_NOTHING, responses=accepted(SharedPresignedAcceptedOut))
def share_presigned(body: Annotated[SharePresignRequest, Body()]) -> Response[SharedPresignedAcceptedOut]:
    p = principal(app)
    taken = accept(intake(), p, IntoSharedPool(body.recipients), body)
    return respond(202, shared_presigned_view(taken))


handler = http_handler(app, settings=UploadsFunction)
