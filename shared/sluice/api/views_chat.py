"""Response bodies of the chat routes (SPEC §12), and how a chat value becomes one."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from sluice.api.views import Body, PresignedPostOut, ProgressOut
from sluice.chat.assembly import AssembledContext, progress_label
from sluice.chat.conversations import ConversationDetail, MessageWithFiles
from sluice.chat.files import Pages, data_url
from sluice.db.chat import Attachment, ChatFile, Conversation

# --- files (R-CHAT-1) ---------------------------------------------------------------------------


class ChatFileOut(Body):
    """R-CHAT-1's answer, and what a card shows."""

    id: str
    filename: str
    mime_type: str | None = Field(description="The resolved (canonical) type; by name until a presigned upload "
                                              "arrives.")
    size: int | None
    file_type: str | None = Field(description="image, pdf, docx, doc, spreadsheet, document, presentation, email, "
                                              "text or archive.")
    preview: str | None = Field(description="The first three non-empty lines of the text, at most 240 characters; "
                                            "null for an image and for a file no parser could read (R-PARSE-4).")
    status: Literal["pending", "ready", "failed"] = Field(
        description="pending: a presigned upload that has not arrived; failed: see error_message.")
    error_message: str | None
    parse_error: str | None = Field(description="Why no text could be read from a stored file, if none could.")
    message_id: str | None
    created_at: datetime | None


class DownloadLinkOut(Body):
    url: str
    expires_in: int


class ChatFileDetailOut(ChatFileOut):
    download: DownloadLinkOut | None = Field(description="A short-lived link to the original; null until stored.")


class PresignedChatFileOut(ChatFileOut):
    upload: PresignedPostOut


def chat_file_view(f: ChatFile) -> ChatFileOut:
    return ChatFileOut(**_file_fields(f))


def _file_fields(f: ChatFile) -> dict[str, object]:
    return {"id": str(f.id), "filename": f.filename, "mime_type": f.mime_type, "size": f.size,
            "file_type": f.file_type, "preview": f.preview, "status": f.status, "error_message": f.error_message,
            "parse_error": f.parse_error, "message_id": str(f.message_id) if f.message_id else None,
            "created_at": f.created_at}


def chat_file_detail_view(f: ChatFile, url: str | None, expires_in: int) -> ChatFileDetailOut:
    download = DownloadLinkOut(url=url, expires_in=expires_in) if url is not None else None
    return ChatFileDetailOut(**_file_fields(f), download=download)


def presigned_chat_file_view(f: ChatFile, upload: dict[str, object]) -> PresignedChatFileOut:
    return PresignedChatFileOut(**_file_fields(f), upload=PresignedPostOut.model_validate(upload))


class PageOut(Body):
    number: int
    width: int
    height: int
    data_url: str = Field(description="The page as a PNG data: URL.")


class PagesOut(Body):
    file_id: str
    filename: str
    page_count: int
    shown: int
    left_out: int = Field(description="Pages not shown: past the cap, or past the answer's size budget.")
    cap: int = Field(description="CHAT_TIFF_MAX_INLINE_PAGES.")
    note: str | None = Field(description="Which pages were left out and why; null when every page is shown.")
    pages: list[PageOut]


def pages_view(result: Pages) -> PagesOut:
    r = result.rendered
    left_out = r.left_out_by_cap + r.left_out_by_size
    notes: list[str] = []
    if r.left_out_by_cap:
        why = (f"the cap of {result.cap} (CHAT_TIFF_MAX_INLINE_PAGES)" if result.asked >= result.cap
               else f"the {result.asked} asked for")
        notes.append(f"{r.left_out_by_cap} of {r.page_count} pages left out by {why}")
    if r.left_out_by_size:
        notes.append(f"{r.left_out_by_size} more left out because the answer would be too large; "
                     "download the file for them")
    note = None
    if notes:
        note = f"Showing {len(r.pages)} of {r.page_count} pages: " + "; ".join(notes) + "."
    return PagesOut(file_id=str(result.file.id), filename=result.file.filename, page_count=r.page_count,
                    shown=len(r.pages), left_out=left_out, cap=result.cap, note=note,
                    pages=[PageOut(number=p.number, width=p.width, height=p.height, data_url=data_url(p.png))
                           for p in r.pages])


# --- conversations and messages -----------------------------------------------------------------

class ConversationOut(Body):
    id: str
    title: str
    created_at: datetime | None


class ConversationsOut(Body):
    conversations: list[ConversationOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


class MessageOut(Body):
    id: str
    conversation_id: str
    text: str
    files: list[ChatFileOut]
    created_at: datetime | None


class AttachmentOut(Body):
    id: str
    conversation_id: str
    file_id: str
    filename: str
    status: Literal["reading", "indexing", "summarizing", "indexed", "full_text", "failed"]
    progress: ProgressOut | None = Field(description="The steps of the current status: embedding batches while "
                                                     "indexing, model calls while summarizing.")
    label: str = Field(description="The status with its steps, as a chip shows it: 'summarizing 2/3'.")
    tier: Literal["small", "medium", "large"] | None = Field(
        description="small: the full text is kept; medium and large: chunks, embeddings and an overview.")
    tokens: int | None = Field(description="The extracted text's tokens, by the bundled model's tokenizer.")
    chunk_count: int
    overview: str | None
    overview_kind: Literal["model", "extractive"] | None = Field(
        description="extractive: leading sentences of each part, when no chat model wrote it.")
    overview_note: str | None
    error_message: str | None
    registered_document_id: str | None = Field(description="The knowledge-base document it was registered as.")
    created_at: datetime | None


class AttachmentsOut(Body):
    attachments: list[AttachmentOut]
    limit: int = Field(description="CHAT_MAX_ATTACHMENTS.")


class ConversationDetailOut(ConversationOut):
    messages: list[MessageOut]
    attachments: list[AttachmentOut]


def conversation_view(c: Conversation) -> ConversationOut:
    return ConversationOut(id=str(c.id), title=c.title, created_at=c.created_at)


def conversations_view(items: list[Conversation], total: int, limit: int, offset: int) -> ConversationsOut:
    end = offset + len(items)
    return ConversationsOut(conversations=[conversation_view(c) for c in items], total=total, limit=limit,
                            offset=offset, next_offset=end if end < total else None)


def message_view(m: MessageWithFiles) -> MessageOut:
    return MessageOut(id=str(m.message.id), conversation_id=str(m.message.conversation_id), text=m.message.text,
                      files=[chat_file_view(f) for f in m.files], created_at=m.message.created_at)


def attachment_view(a: Attachment, f: ChatFile) -> AttachmentOut:
    progress = None
    if a.progress_total is not None and a.status in ("indexing", "summarizing"):
        progress = ProgressOut(done=a.progress_done or 0, total=a.progress_total)
    return AttachmentOut(
        id=str(a.id), conversation_id=str(a.conversation_id), file_id=str(a.file_id), filename=f.filename,
        status=a.status, progress=progress, label=progress_label(a), tier=a.tier,
        tokens=a.tokens, chunk_count=a.chunk_count if a.status == "indexed" else 0, overview=a.overview,
        overview_kind=a.overview_kind, overview_note=a.overview_note,
        error_message=a.error_message,
        registered_document_id=str(a.registered_document_id) if a.registered_document_id else None,
        created_at=a.created_at)


def attachments_view(pairs: list[tuple[Attachment, ChatFile]], limit: int) -> AttachmentsOut:
    return AttachmentsOut(attachments=[attachment_view(a, f) for a, f in pairs], limit=limit)


def conversation_detail_view(d: ConversationDetail) -> ConversationDetailOut:
    return ConversationDetailOut(**conversation_view(d.conversation).model_dump(),
                                 messages=[message_view(m) for m in d.messages],
                                 attachments=[attachment_view(a, f) for a, f in d.attachments])


# --- context (R-CHAT-3) -----------------------------------------------------------------------------

class TraceAttachmentOut(Body):
    attachment_id: str
    file_id: str
    filename: str
    status: str
    tier: str | None
    tokens: int | None = Field(description="The document's own extracted tokens.")
    contributes: Literal["overview", "full_text", "note", "reference"]
    tokens_contributed: int = Field(description="Tokens of the block this attachment accounts for, its excerpts "
                                                "included.")
    excerpts: int


class ContextTraceOut(Body):
    query: str = Field(description="The question searched with, as the user wrote it.")
    searched: bool = Field(description="Whether an excerpt search ran (an indexed attachment is present).")
    documents: list[str] = Field(description="The attachments the search was scoped to.")
    top_k: int
    threshold: float
    count: int = Field(description="Excerpts that came back.")
    attachments: list[TraceAttachmentOut]
    total_tokens: int


class ExcerptOut(Body):
    number: int
    attachment_id: str
    filename: str
    chunk_index: int
    page_start: int | None
    page_end: int | None
    content: str
    vec_score: float
    text_score: float


class FetchOut(Body):
    path: str = Field(description="Where to write it in the workspace.")
    url: str = Field(description="A short-lived link to fetch it from.")


class ReferenceOut(Body):
    attachment_id: str
    file_id: str
    filename: str
    path: str
    size: int | None
    file_type: str | None
    reference: str = Field(description="What the model reads: the 'Attached file:' line and the first 20 lines.")
    original: FetchOut
    extracted_text: FetchOut | None = Field(description="For a format a shell cannot read, its text beside it.")


class ContextOut(Body):
    mode: Literal["inline", "reference"]
    context: str = Field(description="The assembled block the model reads; built for this question, never stored.")
    trace: ContextTraceOut
    excerpts: list[ExcerptOut]
    references: list[ReferenceOut]
    expires_in: int | None = Field(description="How long the references' links last (reference mode).")


def context_view(a: AssembledContext) -> ContextOut:
    attachments = [
        TraceAttachmentOut(attachment_id=str(c.attachment.id), file_id=str(c.file.id), filename=c.file.filename,
                           status=c.attachment.status, tier=c.attachment.tier, tokens=c.attachment.tokens,
                           contributes=c.contributes, tokens_contributed=c.tokens,
                           excerpts=c.excerpts)
        for c in a.contributions
    ]
    trace = ContextTraceOut(query=a.question, searched=a.searched, documents=a.documents, top_k=a.top_k,
                            threshold=0.0, count=len(a.excerpts), attachments=attachments,
                            total_tokens=a.total_tokens)
    excerpts = [ExcerptOut(number=e.number, attachment_id=str(e.candidate.document_id), filename=e.filename,
                           chunk_index=e.candidate.chunk_index, page_start=e.candidate.page_start,
                           page_end=e.candidate.page_end, content=e.candidate.content,
                           vec_score=round(e.candidate.vec_score, 6), text_score=round(e.candidate.text_score, 6))
                for e in a.excerpts]
    references = [ReferenceOut(attachment_id=str(r.attachment.id), file_id=str(r.file.id), filename=r.file.filename,
                               path=r.path, size=r.file.size, file_type=r.file.file_type, reference=r.text,
                               original=FetchOut(path=r.original.path, url=r.original.url),
                               extracted_text=FetchOut(path=r.extracted_text.path, url=r.extracted_text.url)
                               if r.extracted_text else None)
                  for r in a.references]
    return ContextOut(mode=a.mode, context=a.block, trace=trace, excerpts=excerpts,
                      references=references, expires_in=a.url_expires_in if a.mode == "reference" else None)
