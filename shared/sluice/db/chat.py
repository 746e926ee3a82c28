"""Chat files, conversations, messages and attachments (migration 0008): plain SQL, one user's rows.

Every read that a request makes names the owner (``user_id``): a row of another
user is not found, exactly like an absent one (R-ACC-4). The workers, which act
for no user, read by id alone (``*_by_id``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from psycopg.types.json import Jsonb

from sluice.db.connection import Connection


@dataclass
class ChatFile:
    id: uuid.UUID
    user_id: str
    filename: str
    mime_type: str | None
    size: int | None
    file_type: str | None
    storage_path: str
    text_storage_path: str | None
    status: str
    error_message: str | None
    preview: str | None
    parsed_content: str | None
    parse_error: str | None
    message_id: uuid.UUID | None
    created_at: datetime | None
    parsed_pages: list[list[int]] | None = None


@dataclass
class Conversation:
    id: uuid.UUID
    user_id: str
    title: str
    created_at: datetime | None


@dataclass
class ChatMessage:
    id: uuid.UUID
    conversation_id: uuid.UUID
    user_id: str
    text: str
    created_at: datetime | None


class AttachmentStatus(StrEnum):
    """An attachment's state; only the transitions below change it (``update_attachment`` refuses it)."""

    READING = "reading"  # attached, its tokens not yet counted
    INDEXING = "indexing"  # medium or large: its chunks being embedded, batch by batch
    SUMMARIZING = "summarizing"  # chunks stored, the overview being written
    FULL_TEXT = "full_text"  # small: the whole text goes into the context, nothing indexed
    INDEXED = "indexed"  # chunks and overview written
    FAILED = "failed"  # with the sentence in ``error_message``; attaching again restarts it


class Tier(StrEnum):
    """How an attachment reaches the context (R-CHAT-2), by its tokens; set once, when it is graded."""

    SMALL = "small"
    MEDIUM = "medium"
    LARGE = "large"


WORKING = (AttachmentStatus.READING, AttachmentStatus.INDEXING, AttachmentStatus.SUMMARIZING)


@dataclass
class Attachment:
    id: uuid.UUID
    conversation_id: uuid.UUID
    file_id: uuid.UUID
    user_id: str
    attempt: int
    status: AttachmentStatus
    tier: Tier | None
    tokens: int | None
    progress_done: int | None
    progress_total: int | None
    chunk_count: int
    overview: str | None
    overview_kind: str | None
    overview_note: str | None
    partial_summaries: list[str]
    error_message: str | None
    last_failure: str | None
    redriven_attempt: int | None
    registered_document_id: uuid.UUID | None
    created_at: datetime | None
    updated_at: datetime | None

    def __post_init__(self) -> None:
        self.status = AttachmentStatus(self.status)
        self.tier = Tier(self.tier) if self.tier is not None else None

    @property
    def working(self) -> bool:
        return self.status in WORKING

    def is_current(self, attempt: int) -> bool:
        """Whether a job for ``attempt`` may still act on this attachment."""
        return self.working and self.attempt == attempt


_FILE_FIELDS = ", ".join(ChatFile.__dataclass_fields__)
# Everything but the text and its page map, which may be megabytes: read only when asked for.
_FILE_META = ", ".join({"parsed_content": "NULL::text AS parsed_content",
                        "parsed_pages": "NULL::jsonb AS parsed_pages"}.get(f, f) for f in ChatFile.__dataclass_fields__)
_CONVERSATION_FIELDS = ", ".join(Conversation.__dataclass_fields__)
_MESSAGE_FIELDS = ", ".join(ChatMessage.__dataclass_fields__)
_ATTACHMENT_FIELDS = ", ".join(Attachment.__dataclass_fields__)


def _file(row: dict[str, Any] | None) -> ChatFile | None:
    return ChatFile(**row) if row else None


def _attachment(row: dict[str, Any] | None) -> Attachment | None:
    return Attachment(**row) if row else None


# --- files ----------------------------------------------------------------------------------------

def insert_file(conn: Connection, **values: Any) -> ChatFile:
    values.setdefault("id", uuid.uuid4())
    if values.get("parsed_pages") is not None:
        values["parsed_pages"] = Jsonb(values["parsed_pages"])
    cols = ", ".join(values)
    params = ", ".join(f"%({k})s" for k in values)
    row = conn.execute(f"INSERT INTO chat_files ({cols}) VALUES ({params}) RETURNING {_FILE_FIELDS}",
                       values).fetchone()
    found = _file(row)
    assert found is not None
    return found


def user_file(conn: Connection, user_id: str, file_id: uuid.UUID, *, with_text: bool = False,
              for_update: bool = False) -> ChatFile | None:
    """The caller's file; ``parsed_content`` is read only when asked for (it may be megabytes)."""
    fields = _FILE_FIELDS if with_text else _FILE_META
    lock = " FOR UPDATE" if for_update else ""
    row = conn.execute(f"SELECT {fields} FROM chat_files WHERE id = %s AND user_id = %s{lock}",
                       (file_id, user_id)).fetchone()
    return _file(row)


def file_by_id(conn: Connection, file_id: uuid.UUID, *, with_text: bool = False,
               for_update: bool = False) -> ChatFile | None:
    fields = _FILE_FIELDS if with_text else _FILE_META
    lock = " FOR UPDATE" if for_update else ""
    return _file(conn.execute(f"SELECT {fields} FROM chat_files WHERE id = %s{lock}", (file_id,)).fetchone())


def update_file(conn: Connection, file_id: uuid.UUID, *, expect_status: str | None = None, **values: Any) -> bool:
    """Set ``values``; with ``expect_status`` only while the row still has it. True if a row changed."""
    if values.get("parsed_pages") is not None:
        values["parsed_pages"] = Jsonb(values["parsed_pages"])
    sets = ", ".join(f"{k} = %({k})s" for k in values)
    where = "id = %(_id)s" + (" AND status = %(_status)s" if expect_status is not None else "")
    cur = conn.execute(f"UPDATE chat_files SET {sets} WHERE {where}",
                       {**values, "_id": file_id, "_status": expect_status})
    return cur.rowcount > 0


def delete_file(conn: Connection, file_id: uuid.UUID) -> None:
    conn.execute("DELETE FROM chat_files WHERE id = %s", (file_id,))


def files_of_message(conn: Connection, message_id: uuid.UUID) -> list[ChatFile]:
    rows = conn.execute(f"SELECT {_FILE_META} FROM chat_files WHERE message_id = %s ORDER BY created_at, id",
                        (message_id,)).fetchall()
    return [ChatFile(**r) for r in rows]


def files_of_conversation_messages(conn: Connection, conversation_id: uuid.UUID) -> list[ChatFile]:
    rows = conn.execute(
        f"SELECT {_FILE_META} FROM chat_files WHERE message_id IN"
        " (SELECT id FROM chat_messages WHERE conversation_id = %s)", (conversation_id,)).fetchall()
    return [ChatFile(**r) for r in rows]


# --- conversations and messages ----------------------------------------------------------------

def insert_conversation(conn: Connection, user_id: str, title: str) -> Conversation:
    row = conn.execute(
        f"INSERT INTO conversations (id, user_id, title) VALUES (%s, %s, %s) RETURNING {_CONVERSATION_FIELDS}",
        (uuid.uuid4(), user_id, title),
    ).fetchone()
    assert row is not None
    return Conversation(**row)


def user_conversation(conn: Connection, user_id: str, conversation_id: uuid.UUID, *,
                      for_update: bool = False) -> Conversation | None:
    lock = " FOR UPDATE" if for_update else ""
    row = conn.execute(f"SELECT {_CONVERSATION_FIELDS} FROM conversations WHERE id = %s AND user_id = %s{lock}",
                       (conversation_id, user_id)).fetchone()
    return Conversation(**row) if row else None


def user_conversations(conn: Connection, user_id: str, *, limit: int, offset: int) -> tuple[list[Conversation], int]:
    """A page of the caller's conversations, newest first, and how many they have."""
    rows = conn.execute(f"SELECT {_CONVERSATION_FIELDS} FROM conversations WHERE user_id = %s"
                        " ORDER BY created_at DESC, id LIMIT %s OFFSET %s", (user_id, limit, offset)).fetchall()
    total = conn.execute("SELECT count(*) AS n FROM conversations WHERE user_id = %s", (user_id,)).fetchone()
    return [Conversation(**r) for r in rows], int(total["n"]) if total else 0


def delete_conversation(conn: Connection, conversation_id: uuid.UUID) -> None:
    conn.execute("DELETE FROM conversations WHERE id = %s", (conversation_id,))


def insert_message(conn: Connection, conversation_id: uuid.UUID, user_id: str, text: str) -> ChatMessage:
    row = conn.execute(
        f"INSERT INTO chat_messages (id, conversation_id, user_id, text) VALUES (%s, %s, %s, %s)"
        f" RETURNING {_MESSAGE_FIELDS}", (uuid.uuid4(), conversation_id, user_id, text)).fetchone()
    assert row is not None
    return ChatMessage(**row)


def messages_of(conn: Connection, conversation_id: uuid.UUID) -> list[ChatMessage]:
    rows = conn.execute(f"SELECT {_MESSAGE_FIELDS} FROM chat_messages WHERE conversation_id = %s"
                        " ORDER BY created_at, id", (conversation_id,)).fetchall()
    return [ChatMessage(**r) for r in rows]


def link_files(conn: Connection, message_id: uuid.UUID, file_ids: list[uuid.UUID]) -> None:
    conn.execute("UPDATE chat_files SET message_id = %s WHERE id = ANY(%s)", (message_id, file_ids))


# --- attachments ---------------------------------------------------------------------------------

def insert_attachment(conn: Connection, conversation_id: uuid.UUID, file_id: uuid.UUID, user_id: str,
                      **values: Any) -> Attachment:
    fields = {"id": uuid.uuid4(), "conversation_id": conversation_id, "file_id": file_id, "user_id": user_id,
              **values}
    cols = ", ".join(fields)
    params = ", ".join(f"%({k})s" for k in fields)
    row = conn.execute(f"INSERT INTO chat_attachments ({cols}) VALUES ({params}) RETURNING {_ATTACHMENT_FIELDS}",
                       fields).fetchone()
    found = _attachment(row)
    assert found is not None
    return found


def attachment_by_id(conn: Connection, attachment_id: uuid.UUID, *, for_update: bool = False) -> Attachment | None:
    lock = " FOR UPDATE" if for_update else ""
    return _attachment(conn.execute(f"SELECT {_ATTACHMENT_FIELDS} FROM chat_attachments WHERE id = %s{lock}",
                                    (attachment_id,)).fetchone())


def attachment_of_file(conn: Connection, file_id: uuid.UUID) -> Attachment | None:
    return _attachment(conn.execute(f"SELECT {_ATTACHMENT_FIELDS} FROM chat_attachments WHERE file_id = %s",
                                    (file_id,)).fetchone())


def conversation_attachment(conn: Connection, conversation_id: uuid.UUID, attachment_id: uuid.UUID, *,
                            for_update: bool = False) -> Attachment | None:
    lock = " FOR UPDATE" if for_update else ""
    return _attachment(conn.execute(
        f"SELECT {_ATTACHMENT_FIELDS} FROM chat_attachments WHERE id = %s AND conversation_id = %s{lock}",
        (attachment_id, conversation_id)).fetchone())


def attachments_of(conn: Connection, conversation_id: uuid.UUID) -> list[Attachment]:
    rows = conn.execute(f"SELECT {_ATTACHMENT_FIELDS} FROM chat_attachments WHERE conversation_id = %s"
                        " ORDER BY created_at, id", (conversation_id,)).fetchall()
    return [Attachment(**r) for r in rows]


# What ``update_attachment`` may set: a step's progress and facts. The status and the tier, and the
# fields that go with them, change only through the transitions below.
_ATTACHMENT_UPDATABLE = {"progress_done", "progress_total", "partial_summaries", "last_failure",
                         "registered_document_id"}


def update_attachment(conn: Connection, attachment_id: uuid.UUID, *, expect_attempt: int | None = None,
                      **values: Any) -> bool:
    """Set ``values`` (and ``updated_at``); with ``expect_attempt`` only while that attempt is still at work."""
    unknown = set(values) - _ATTACHMENT_UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}; a status or tier changes through a named transition")
    return _set_attachment(conn, attachment_id, values, expect_attempt=expect_attempt)


def _set_attachment(conn: Connection, attachment_id: uuid.UUID, values: dict[str, Any], *,
                    expect_attempt: int | None = None, expect_status: AttachmentStatus | None = None) -> bool:
    if "partial_summaries" in values:
        values["partial_summaries"] = Jsonb(values["partial_summaries"])
    sets = ", ".join([*(f"{k} = %({k})s" for k in values), "updated_at = now()"])
    where = "id = %(_id)s"
    if expect_attempt is not None:
        where += " AND attempt = %(_attempt)s AND status IN ('reading', 'indexing', 'summarizing')"
    if expect_status is not None:
        where += " AND status = %(_status)s"
    cur = conn.execute(f"UPDATE chat_attachments SET {sets} WHERE {where}",
                       {**values, "_id": attachment_id, "_attempt": expect_attempt,
                        "_status": expect_status.value if expect_status is not None else None})
    return cur.rowcount > 0


# --- an attachment's transitions: every change of its status or tier -------------------------------

def restart_attachment(conn: Connection, attachment_id: uuid.UUID, attempt: int) -> bool:
    """failed → reading on a new ``attempt`` (attached again), with nothing of the last attempt left."""
    return _set_attachment(conn, attachment_id, {
        "attempt": attempt, "status": AttachmentStatus.READING.value, "tier": None, "tokens": None,
        "progress_done": None, "progress_total": None, "chunk_count": 0, "overview": None,
        "overview_kind": None, "overview_note": None, "partial_summaries": [], "error_message": None,
        "last_failure": None})


def fail_attachment(conn: Connection, attachment_id: uuid.UUID, message: str, *,
                    expect_attempt: int | None = None, tokens: int | None = None) -> bool:
    """→ failed with ``message``, its progress cleared (``tokens``: a grading that found no text, 0)."""
    values: dict[str, Any] = {"status": AttachmentStatus.FAILED.value, "error_message": message,
                              "progress_done": None, "progress_total": None}
    if tokens is not None:
        values["tokens"] = tokens
    return _set_attachment(conn, attachment_id, values, expect_attempt=expect_attempt)


def grade_attachment(conn: Connection, attachment_id: uuid.UUID, tier: Tier, tokens: int, *,
                     chunk_count: int = 0, batches: int = 0) -> AttachmentStatus:
    """reading → its tier settled: a small one is kept as full text, any other starts indexing its
    ``chunk_count`` chunks in ``batches``. Returns the status it took."""
    if tier is Tier.SMALL:
        status, values = AttachmentStatus.FULL_TEXT, {}
    else:
        status, values = AttachmentStatus.INDEXING, {"chunk_count": chunk_count, "progress_done": 0,
                                                    "progress_total": batches}
    _set_attachment(conn, attachment_id, {"status": status.value, "tier": tier.value, "tokens": tokens, **values},
                    expect_status=AttachmentStatus.READING)
    return status


def start_summarizing(conn: Connection, attachment_id: uuid.UUID, *, chunk_count: int, calls: int) -> bool:
    """indexing → summarizing: every chunk stored, ``calls`` model calls to make."""
    return _set_attachment(conn, attachment_id, {
        "status": AttachmentStatus.SUMMARIZING.value, "chunk_count": chunk_count, "progress_done": 0,
        "progress_total": calls, "partial_summaries": []}, expect_status=AttachmentStatus.INDEXING)


def mark_indexed(conn: Connection, attachment_id: uuid.UUID, overview: str, *, kind: str,
                 note: str | None) -> bool:
    """summarizing → indexed with its overview (``kind``: model or extractive)."""
    return _set_attachment(conn, attachment_id, {
        "status": AttachmentStatus.INDEXED.value, "overview": overview, "overview_kind": kind,
        "overview_note": note, "partial_summaries": [], "progress_done": None, "progress_total": None,
        "last_failure": None}, expect_status=AttachmentStatus.SUMMARIZING)


def delete_attachment(conn: Connection, attachment_id: uuid.UUID) -> None:
    conn.execute("DELETE FROM chat_attachments WHERE id = %s", (attachment_id,))


def fail_working_attachments(conn: Connection, message: str) -> int:
    """Every attachment still at work becomes failed with ``message``; how many did."""
    cur = conn.execute(
        "UPDATE chat_attachments SET status = 'failed', error_message = %s, progress_done = NULL,"
        " progress_total = NULL, updated_at = now() WHERE status IN ('reading', 'indexing', 'summarizing')",
        (message,))
    return cur.rowcount


def fail_stored_files(conn: Connection, message: str) -> int:
    """Every file that is stored or awaiting its bytes becomes failed with ``message``; how many did
    (a store that started empty: the local runtime after a restart)."""
    cur = conn.execute(
        "UPDATE chat_files SET status = 'failed', error_message = %s WHERE status IN ('ready', 'pending')",
        (message,))
    return cur.rowcount


# --- the reaper (sluice.chat.recovery) ----------------------------------------------------------

def stale_attachments(conn: Connection, *, idle_for: timedelta, limit: int) -> list[Attachment]:
    """Attachments still at work that nothing has changed for ``idle_for``, the longest idle first."""
    rows = conn.execute(
        f"SELECT {_ATTACHMENT_FIELDS} FROM chat_attachments WHERE status IN ('reading', 'indexing', 'summarizing')"
        " AND updated_at < now() - %s ORDER BY updated_at, id LIMIT %s",
        (idle_for, limit),
    ).fetchall()
    return [Attachment(**r) for r in rows]


def mark_redriven(conn: Connection, attachment: Attachment) -> bool:
    """Note that the reaper resumed this attempt once, if the row is exactly as it read it."""
    return _settle_stale(conn, attachment, redriven_attempt=attachment.attempt)


def fail_stale_attachment(conn: Connection, attachment: Attachment, message: str) -> bool:
    """→ failed with ``message``, if the row is exactly as the reaper read it."""
    return _settle_stale(conn, attachment, status=AttachmentStatus.FAILED.value, error_message=message,
                         progress_done=None, progress_total=None)


def _settle_stale(conn: Connection, attachment: Attachment, **values: Any) -> bool:
    """Set ``values`` (and ``updated_at``) only if the row is exactly as the reaper read it."""
    sets = ", ".join([*(f"{k} = %({k})s" for k in values), "updated_at = now()"])
    cur = conn.execute(
        f"UPDATE chat_attachments SET {sets} WHERE id = %(_id)s AND attempt = %(_attempt)s"
        " AND status = %(_status)s AND updated_at = %(_updated_at)s",
        {**values, "_id": attachment.id, "_attempt": attachment.attempt, "_status": attachment.status.value,
         "_updated_at": attachment.updated_at})
    return cur.rowcount > 0


def stale_pending_files(conn: Connection, *, older_than: timedelta, limit: int) -> list[ChatFile]:
    """Presigned uploads still waiting for their bytes after ``older_than``, the oldest first."""
    rows = conn.execute(
        f"SELECT {_FILE_META} FROM chat_files WHERE status = 'pending' AND created_at < now() - %s"
        " ORDER BY created_at, id LIMIT %s",
        (older_than, limit),
    ).fetchall()
    return [ChatFile(**r) for r in rows]
