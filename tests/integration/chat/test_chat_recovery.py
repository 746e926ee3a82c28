"""The reaper's chat sweep (sluice.chat.recovery): an attachment whose job was lost is resumed once on
the chat queue, then failed with a sentence; a presigned chat upload that never arrived fails.
Nothing stays "indexing" or "pending" for ever, and nothing is sent anywhere but the chat queue."""

from __future__ import annotations

import pytest

from sluice.chat import attachments, conversations, files, recovery
from sluice.chat.conversations import NewConversation
from sluice.chat.files import PresignChatFile
from sluice.chat.recovery import NEVER_ARRIVED, NEVER_CHECKED, ChatReaped
from tests.chat_samples import report_pdf
from tests.fakes import FakeEmbedder
from tests.integration.chat.conftest import ALICE


@pytest.fixture
def fast(chat):
    embedder = FakeEmbedder()
    chat.res.embedder = lambda: embedder
    return chat


def idle(chat, table: str, row_id, column: str = "updated_at") -> None:
    """Nothing changed the row for three hours (the default STALE_AFTER_SECONDS is two)."""
    chat.rows(f"UPDATE {table} SET {column} = now() - interval '3 hours' WHERE id = %s RETURNING id", row_id)


def lost_attachment(chat):
    """A 40-page report attached, graded (indexing), whose job message was lost."""
    cid = str(conversations.create_conversation(chat.res, ALICE, NewConversation()).id)
    f = files.upload(chat.res, ALICE, "report.pdf", report_pdf(40))
    att, _ = attachments.attach(chat.res, ALICE, cid, f.id)
    assert att.status == "indexing" and len(chat.jobs) == 1
    chat.jobs.clear()
    return cid, att


def status(chat, att) -> dict:
    [row] = chat.rows("SELECT status, error_message, overview FROM chat_attachments WHERE id = %s", att.id)
    return row


def test_a_lost_job_is_resumed_once_on_the_chat_queue_and_the_attachment_ends_indexed(fast):
    chat = fast
    cid, att = lost_attachment(chat)
    fresh_cid, fresh = lost_attachment(chat)  # idle, but not for long: left alone
    idle(chat, "chat_attachments", att.id)

    reaped = recovery.reap(chat.res, backlog=lambda: False)

    assert reaped == ChatReaped(redriven=1)
    assert chat.jobs == [{"chat_attachment": str(att.id), "attempt": att.attempt}]
    chat.run_jobs()
    row = status(chat, att)
    assert row["status"] == "indexed" and row["overview"]
    assert chat.chunk_count(att.id) > 0
    assert status(chat, fresh)["status"] == "indexing" and chat.chunk_count(fresh.id) == 0


def test_stalled_again_after_its_resume_it_fails_with_a_sentence_unless_the_queue_has_a_backlog(fast):
    chat = fast
    _, att = lost_attachment(chat)
    idle(chat, "chat_attachments", att.id)
    assert recovery.reap(chat.res, backlog=lambda: False).redriven == 1
    chat.jobs.clear()  # lost again
    idle(chat, "chat_attachments", att.id)

    # a chat queue still holding messages is a backlog, not a loss: wait for the next sweep
    assert recovery.reap(chat.res, backlog=lambda: True) == ChatReaped(waiting=1)
    assert status(chat, att)["status"] == "indexing"

    assert recovery.reap(chat.res, backlog=lambda: False) == ChatReaped(failed=1)
    row = status(chat, att)
    assert row["status"] == "failed"
    assert row["error_message"] == ("The attachment's work was interrupted while indexing: nothing moved for "
                                    "2 h 0 min, even after it was resumed once. Attach the file again.")
    assert chat.jobs == []
    # a late delivery of its job changes nothing
    chat.jobs.append({"chat_attachment": str(att.id), "attempt": att.attempt})
    chat.run_jobs()
    assert status(chat, att)["status"] == "failed" and chat.chunk_count(att.id) == 0


def test_a_presigned_chat_upload_that_never_arrived_or_was_never_checked_fails(fast):
    chat = fast
    never = files.presign(chat.res, ALICE, PresignChatFile(filename="never.txt"))
    landed = files.presign(chat.res, ALICE, PresignChatFile(filename="landed.txt"))
    recent = files.presign(chat.res, ALICE, PresignChatFile(filename="recent.txt"))
    key = landed.upload["fields"]["key"]
    chat.moto.s3.put_object(Bucket=chat.moto.name, Key=key, Body=b"arrived, notice lost")
    idle(chat, "chat_files", never.file.id, "created_at")
    idle(chat, "chat_files", landed.file.id, "created_at")

    reaped = recovery.reap(chat.res, backlog=lambda: False)

    assert reaped == ChatReaped(uploads_failed=2)
    never_row = files.get_file(chat.res, ALICE, never.file.id)
    landed_row = files.get_file(chat.res, ALICE, landed.file.id)
    assert (never_row.status, never_row.error_message) == ("failed", NEVER_ARRIVED)
    assert (landed_row.status, landed_row.error_message) == ("failed", NEVER_CHECKED)
    assert chat.keys("chat-incoming/") == []
    assert files.get_file(chat.res, ALICE, recent.file.id).status == "pending"
    assert chat.jobs == []  # nothing was queued anywhere
