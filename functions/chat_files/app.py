"""Chat file routes (SPEC §12, R-CHAT-1, R-ACC-4): direct upload (parsed in the request), presigned
upload, metadata and download, delete, and a TIFF's or PDF's pages rendered. This function carries the
parsing libraries and not the model; the conversation routes are functions/chat (docs/operations/deploying.md).

Every route is its caller's only: another user's file is answered exactly like an absent one (404).
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, File, Query, UploadFile

from sluice.api.forms import fit_a_direct_upload
from sluice.api.http import build_resolver, principal, respond
from sluice.api.responses import accepted, created, no_content
from sluice.api.views_chat import (
    ChatFileDetailOut,
    ChatFileOut,
    PagesOut,
    PresignedChatFileOut,
    chat_file_detail_view,
    chat_file_view,
    pages_view,
    presigned_chat_file_view,
)
from sluice.chat import files
from sluice.chat.files import PresignChatFile
from sluice.config import current
from sluice.config.functions import ChatFilesFunction
from sluice.observability import http_handler
from sluice.wiring import chat_resources

app = build_resolver()


# --- files ----------------------------------------------------------------------------------------

@app.post("/files/upload", summary="Upload a chat file in the request (up to the direct-upload limit)",
          responses=created(ChatFileOut))
def upload_file(file: Annotated[UploadFile, File(description="The file.")]) -> Response[ChatFileOut]:
    p = principal(app)
    fit_a_direct_upload(file.content, ceiling_mb=current(ChatFilesFunction).chat_max_upload_size_mb,
                        presigned_route="/files/uploads", larger="chat files")
    row = files.upload(chat_resources(), p, file.filename or "file", file.content)
    return respond(201, chat_file_view(row))


@app.post("/files/uploads", summary="Ask for a presigned POST for a chat file (up to CHAT_MAX_UPLOAD_SIZE_MB)",
          responses=accepted(PresignedChatFileOut))
def presign_file(body: Annotated[PresignChatFile, Body()]) -> Response[PresignedChatFileOut]:
    p = principal(app)
    taken = files.presign(chat_resources(), p, body)
    return respond(202, presigned_chat_file_view(taken.file, taken.upload))


@app.get("/files/<file_id>", summary="A chat file's metadata and a short-lived download link (owner only)")
def get_file(file_id: str) -> ChatFileDetailOut:
    p = principal(app)
    res = chat_resources()
    row = files.get_file(res, p, file_id)
    return chat_file_detail_view(row, files.download_url(res, row), res.settings.download_url_expires_seconds)


@app.delete("/files/<file_id>", summary="Delete a chat file, its stored objects, and an attachment of it",
            responses=no_content())
def delete_file(file_id: str) -> Response[None]:
    p = principal(app)
    files.delete_file(chat_resources(), p, file_id)
    return respond(204, None)


@app.get("/files/<file_id>/pages", summary="A TIFF's (or PDF's) first pages as PNG, capped by "
                                           "CHAT_TIFF_MAX_INLINE_PAGES")
def file_pages(file_id: str, max: Annotated[int | None, Query(ge=1, le=1000)] = None) -> PagesOut:  # noqa: A002
    p = principal(app)
    return pages_view(files.pages(chat_resources(), p, file_id, max))


handler = http_handler(app, settings=ChatFilesFunction)
