"""Chat conversation routes (SPEC §12, R-CHAT-2..4, R-ACC-4): conversations, messages, attachments
(attach, list, remove, register into a base) and the context a question reads. This function carries
the model (a question is embedded, text counted with its tokenizer) and not the parsing libraries:
files are uploaded, checked and parsed by functions/chat_files (docs/operations/deploying.md).

Every route is its caller's only: another user's conversation, file or attachment is answered exactly
like an absent one (404).
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from sluice.api.http import build_resolver, principal, respond
from sluice.api.responses import accepted, created, no_content
from sluice.api.views import AcceptedOut, accepted_view
from sluice.api.views_chat import (
    AttachmentOut,
    AttachmentsOut,
    ContextOut,
    ConversationDetailOut,
    ConversationOut,
    ConversationsOut,
    MessageOut,
    attachment_view,
    attachments_view,
    context_view,
    conversation_detail_view,
    conversation_view,
    conversations_view,
    message_view,
)
from sluice.chat import assembly, attachments, conversations
from sluice.chat.assembly import ContextRequest
from sluice.chat.conversations import NewConversation, NewMessage
from sluice.config.functions import ChatFunction
from sluice.ingest.uploads import Accepted
from sluice.observability import http_handler
from sluice.wiring import chat_resources

app = build_resolver()

_REGISTER_DOC = "The knowledge base to copy the attachment into; the caller must be able to write it."


# --- conversations and messages ---------------------------------------------------------------

@app.post("/conversations", summary="Start a conversation", responses=created(ConversationOut))
def create_conversation(body: Annotated[NewConversation, Body()]) -> Response[ConversationOut]:
    p = principal(app)
    return respond(201, conversation_view(conversations.create_conversation(chat_resources(), p, body)))


@app.get("/conversations", summary="The caller's conversations, newest first")
def list_conversations(limit: Annotated[int, Query(ge=1, le=200)] = 50,
                       offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0) -> ConversationsOut:
    p = principal(app)
    items, total = conversations.list_conversations(chat_resources(), p, limit=limit, offset=offset)
    return conversations_view(items, total, limit, offset)


@app.get("/conversations/<conversation_id>", summary="A conversation with its messages and attachments")
def get_conversation(conversation_id: str) -> ConversationDetailOut:
    p = principal(app)
    return conversation_detail_view(conversations.get_conversation(chat_resources(), p, conversation_id))


@app.delete("/conversations/<conversation_id>", summary="Delete a conversation: its messages, attachments, "
                                                        "chunks and files", responses=no_content())
def delete_conversation(conversation_id: str) -> Response[None]:
    p = principal(app)
    conversations.delete_conversation(chat_resources(), p, conversation_id)
    return respond(204, None)


@app.post("/conversations/<conversation_id>/messages", summary="Post a message, linking the sender's own "
                                                               "unlinked files", responses=created(MessageOut))
def post_message(conversation_id: str, body: Annotated[NewMessage, Body()]) -> Response[MessageOut]:
    p = principal(app)
    return respond(201, message_view(conversations.post_message(chat_resources(), p, conversation_id, body)))


# --- attachments and context ----------------------------------------------------------------------

@app.post("/conversations/<conversation_id>/attachments", summary="Attach a file: graded by its tokens, "
          "indexed and summarised off the request when large", responses=accepted(AttachmentOut))
def attach(conversation_id: str, body: Annotated[attachments.AttachBody, Body()]) -> Response[AttachmentOut]:
    p = principal(app)
    attachment, file = attachments.attach(chat_resources(), p, conversation_id, body.file_id)
    return respond(202, attachment_view(attachment, file))


@app.get("/conversations/<conversation_id>/attachments", summary="A conversation's attachments, with status, "
                                                                 "progress and tier")
def list_attachments(conversation_id: str) -> AttachmentsOut:
    p = principal(app)
    res = chat_resources()
    return attachments_view(attachments.list_attachments(res, p, conversation_id), res.settings.chat_max_attachments)


@app.delete("/conversations/<conversation_id>/attachments/<attachment_id>",
            summary="Remove an attachment: its chunks, stored file and record", responses=no_content())
def remove_attachment(conversation_id: str, attachment_id: str) -> Response[None]:
    p = principal(app)
    attachments.remove_attachment(chat_resources(), p, conversation_id, attachment_id)
    return respond(204, None)


@app.post("/conversations/<conversation_id>/attachments/<attachment_id>/register",
          summary="Copy an indexed attachment into a knowledge base the caller may write",
          responses=accepted(AcceptedOut))
def register_attachment(conversation_id: str, attachment_id: str,
                        body: Annotated[attachments.RegisterBody, Body(description=_REGISTER_DOC)]
                        ) -> Response[AcceptedOut]:
    p = principal(app)
    taken: Accepted = attachments.register(chat_resources(), p, conversation_id, attachment_id, str(body.kb_id))
    return respond(202, accepted_view(taken))


@app.post("/conversations/<conversation_id>/context", summary="What the model reads for a question (R-CHAT-3), "
                                                              "with the trace; or, mode reference, the references")
def context(conversation_id: str, body: Annotated[ContextRequest, Body()]) -> ContextOut:
    p = principal(app)
    return context_view(assembly.assemble(chat_resources(), p, conversation_id, body))


handler = http_handler(app, settings=ChatFunction)
