"""Conversations and their messages: owned by the caller, linked only to the sender's own files.

Every route on another user's conversation answers exactly as for an absent one (R-ACC-4).
A message links only the sender's own unlinked, uploaded files; one id that is not that
refuses the whole request and changes nothing (seed 000, "Ownership & access").
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from sluice.chat.files import parse_id, stored_keys
from sluice.chat.resources import ChatResources
from sluice.db import chat as repo
from sluice.db.chat import Attachment, ChatFile, ChatMessage, Conversation
from sluice.db.connection import Connection
from sluice.errors import ConflictError, NotFoundError
from sluice.identity import Principal
from sluice.vectors import attachments as chunk_store

MAX_FILES_PER_MESSAGE = 20


class NewConversation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field("", max_length=200)


class NewMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field("", max_length=100_000)
    file_ids: list[uuid.UUID] = Field(default_factory=list, max_length=MAX_FILES_PER_MESSAGE)


def conversation_not_found() -> NotFoundError:
    return NotFoundError("Conversation not found")


def owned_conversation(conn: Connection, p: Principal, conversation_id: str | uuid.UUID, *,
                       for_update: bool = False) -> Conversation:
    """The caller's conversation, or the one answer an absent one gets."""
    ident = parse_id(conversation_id, conversation_not_found())
    conversation = repo.user_conversation(conn, p.user_id, ident, for_update=for_update)
    if conversation is None:
        raise conversation_not_found()
    return conversation


def create_conversation(res: ChatResources, p: Principal, body: NewConversation) -> Conversation:
    with res.uow() as conn:
        return repo.insert_conversation(conn, p.user_id, body.title.strip())


def list_conversations(res: ChatResources, p: Principal, *, limit: int, offset: int
                       ) -> tuple[list[Conversation], int]:
    with res.uow() as conn:
        return repo.user_conversations(conn, p.user_id, limit=limit, offset=offset)


@dataclass
class MessageWithFiles:
    message: ChatMessage
    files: list[ChatFile]


@dataclass
class ConversationDetail:
    conversation: Conversation
    messages: list[MessageWithFiles]
    attachments: list[tuple[Attachment, ChatFile]]


def get_conversation(res: ChatResources, p: Principal, conversation_id: str) -> ConversationDetail:
    with res.uow() as conn:
        conversation = owned_conversation(conn, p, conversation_id)
        messages = [MessageWithFiles(m, repo.files_of_message(conn, m.id))
                    for m in repo.messages_of(conn, conversation.id)]
        attachments = attachments_with_files(conn, conversation.id)
    return ConversationDetail(conversation, messages, attachments)


def attachments_with_files(conn: Connection, conversation_id: uuid.UUID) -> list[tuple[Attachment, ChatFile]]:
    out = []
    for attachment in repo.attachments_of(conn, conversation_id):
        file = repo.file_by_id(conn, attachment.file_id)
        if file is not None:
            out.append((attachment, file))
    return out


def post_message(res: ChatResources, p: Principal, conversation_id: str, body: NewMessage) -> MessageWithFiles:
    """A message, with the files it links; all of it or nothing.

    Each file is locked while it is checked, so two messages racing for one file cannot both take it.
    """
    ids = sorted(dict.fromkeys(body.file_ids))
    with res.uow() as conn:
        conversation = owned_conversation(conn, p, conversation_id)
        files: list[ChatFile] = []
        for file_id in ids:
            file = repo.user_file(conn, p.user_id, file_id, for_update=True)
            if file is None:
                raise NotFoundError("File not found", details={"file_id": str(file_id)})
            if file.message_id is not None:
                raise ConflictError("A file can be linked to one message only; this one already is.",
                                    details={"file_id": str(file_id)})
            if file.status != "ready":
                raise ConflictError("This file has not finished uploading, or its upload failed.",
                                    details={"file_id": str(file_id), "status": file.status})
            files.append(file)
        message = repo.insert_message(conn, conversation.id, p.user_id, body.text)
        if ids:
            repo.link_files(conn, message.id, ids)
        linked = repo.files_of_message(conn, message.id)
    return MessageWithFiles(message, linked)


def delete_conversation(res: ChatResources, p: Principal, conversation_id: str) -> Conversation:
    """R-CHAT-4: the conversation, its messages, its attachments with their chunks, and every file
    attached or linked to a message in it, rows in one transaction, then the stored objects.
    A document registered into a knowledge base is the base's and stays."""
    with res.uow() as conn:
        conversation = owned_conversation(conn, p, conversation_id, for_update=True)
        attachments = repo.attachments_of(conn, conversation.id)
        files = {f.id: f for f in repo.files_of_conversation_messages(conn, conversation.id)}
        for attachment in attachments:
            file = repo.file_by_id(conn, attachment.file_id, for_update=True)
            if file is not None:
                files[file.id] = file
            chunk_store.delete_chunks(conn, attachment.id)
            repo.delete_attachment(conn, attachment.id)
        for file in files.values():
            repo.delete_file(conn, file.id)
        repo.delete_conversation(conn, conversation.id)
    res.store.delete_many(stored_keys(list(files.values())))
    return conversation

