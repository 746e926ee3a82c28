"""Chat files: validate, classify, parse, store, record (R-CHAT-1, R-UP-*, R-ARC-1, R-PARSE-4), the
presigned path's first arrival, messages linking only the sender's own unlinked files (R-ACC-4)."""

from __future__ import annotations

import json
import re
import uuid

import httpx
import pytest

from sluice.chat import conversations, files
from sluice.chat.conversations import NewConversation, NewMessage
from sluice.chat.files import PresignChatFile
from sluice.errors import (
    ArchiveRefusedError,
    ConflictError,
    FileTooLargeError,
    NotFoundError,
    UnsupportedTypeError,
    ValidationError,
)
from tests.chat_samples import tiff_bytes
from tests.integration.chat.conftest import ALICE, MALLORY, words
from tests.unit.parsing.parsing_samples import docx_bytes, image_only_pdf, pdf_bytes, png_bytes, zip_bytes


def test_a_direct_upload_is_parsed_stored_encrypted_and_recorded(chat):
    text = "Quarterly notes\n\n  \nRevenue rose 4%.\nCosts fell.\nA fourth line.\n"
    row = files.upload(chat.res, ALICE, "../../etc/notes.md", text.encode())
    assert row.filename == "notes.md" and row.file_type == "text" and row.mime_type == "text/markdown"
    assert row.preview == "Quarterly notes\nRevenue rose 4%.\nCosts fell."
    assert row.size == len(text.encode()) and row.status == "ready" and row.message_id is None
    assert re.fullmatch(r"chat/alice/[0-9a-f-]{36}_notes\.md", row.storage_path)
    head = chat.moto.s3.head_object(Bucket=chat.moto.name, Key=row.storage_path)
    assert head["ServerSideEncryption"] == "aws:kms" and chat.moto.key_id in head["SSEKMSKeyId"]
    stored = chat.rows("SELECT parsed_content FROM chat_files WHERE id = %s", row.id)[0]
    assert stored["parsed_content"] == text


@pytest.mark.parametrize(("name", "data", "file_type", "preview"), [
    ("photo.png", png_bytes(), "image", None),
    ("memo.docx", docx_bytes(["Board memo", "Second paragraph"]), "docx", "Board memo\nSecond paragraph"),
    ("bundle.zip", zip_bytes([("a/readme.txt", b"x"), ("a/b.csv", b"1,2")]), "archive", "a/readme.txt\na/b.csv"),
])
def test_each_family_is_classified_and_previewed(chat, name, data, file_type, preview):
    row = files.upload(chat.res, ALICE, name, data)
    assert row.file_type == file_type and row.preview == preview


def test_a_file_no_parser_can_read_is_kept_without_a_preview(chat):
    row = files.upload(chat.res, ALICE, "scan.pdf", image_only_pdf(3))
    assert row.preview is None and row.status == "ready"
    assert row.parse_error == "Scanned PDF — 3 pages found but no text could be extracted"
    assert chat.keys("chat/alice/") == [row.storage_path]


@pytest.mark.parametrize(("name", "data", "error"), [
    ("report.pdf", b"MZ\x90\x00 a renamed program", UnsupportedTypeError),
    ("evil.zip", zip_bytes([("../escape.txt", b"x")]), ArchiveRefusedError),
    ("tool.exe", b"MZ\x90\x00", UnsupportedTypeError),
])
def test_refused_uploads_store_nothing(chat, name, data, error):
    with pytest.raises(error) as refused:
        files.upload(chat.res, ALICE, name, data)
    assert refused.value.status == 400
    assert chat.keys("chat/") == [] and chat.rows("SELECT count(*) AS n FROM chat_files")[0]["n"] == 0


def test_the_chat_ceiling_is_counted_on_the_bytes(chat):
    chat.settings(chat_max_upload_size_mb=1)
    with pytest.raises(FileTooLargeError) as refused:
        files.upload(chat.res, ALICE, "big.txt", b"a" * (1024 * 1024 + 1))
    assert refused.value.status == 413 and "1 MB limit for chat files" in refused.value.message
    assert chat.keys("chat/") == []


def _post(upload: dict, name: str, data: bytes, chat) -> None:
    # moto has no HTTP endpoint here: the POST's object is what S3 would write for it.
    key = upload["fields"]["key"]
    chat.moto.s3.put_object(Bucket=chat.moto.name, Key=key, Body=data, ServerSideEncryption="aws:kms",
                       SSEKMSKeyId=chat.moto.key_id)
    chat.jobs.append({"Records": [{"eventName": "ObjectCreated:Post",
                                   "s3": {"object": {"key": key, "size": len(data)}}}]})


def test_a_presigned_upload_keeps_its_first_checked_arrival_only(chat):
    # GIVEN a presigned upload
    taken = files.presign(chat.res, ALICE, PresignChatFile(filename="minutes.txt", size=100))
    assert taken.file.status == "pending" and taken.file.preview is None
    fields = taken.upload["fields"]
    assert fields["key"] == f"chat-incoming/{taken.file.id}/minutes.txt"
    assert fields["x-amz-server-side-encryption"] == "aws:kms"
    # WHEN it arrives: checked, parsed, stored under chat/, the arrival gone
    _post(taken.upload, "minutes.txt", b"First minutes\nagreed", chat)
    chat.run_jobs()
    row = files.get_file(chat.res, ALICE, taken.file.id)
    assert row.status == "ready" and row.preview == "First minutes\nagreed"
    assert chat.keys("chat-incoming/") == []
    original = chat.moto.s3.get_object(Bucket=chat.moto.name, Key=row.storage_path)["Body"].read()
    # AND a replay of the POST with other bytes replaces nothing
    _post(taken.upload, "minutes.txt", b"Forged minutes", chat)
    chat.run_jobs()
    assert chat.moto.s3.get_object(Bucket=chat.moto.name, Key=row.storage_path)["Body"].read() == original
    assert files.get_file(chat.res, ALICE, taken.file.id).preview == "First minutes\nagreed"
    assert chat.keys("chat-incoming/") == []


def test_a_presigned_arrival_that_is_not_what_its_name_says_fails_and_is_not_kept(chat):
    taken = files.presign(chat.res, ALICE, PresignChatFile(filename="notes.pdf"))
    _post(taken.upload, "notes.pdf", b"MZ\x90\x00 a program", chat)
    chat.run_jobs()
    row = files.get_file(chat.res, ALICE, taken.file.id)
    assert row.status == "failed" and "notes.pdf is named as a PDF" in row.error_message
    assert chat.keys("chat") == []
    assert files.download_url(chat.res, row) is None


def test_an_arrival_over_the_ceiling_fails_even_where_the_store_took_it(chat):
    chat.settings(chat_max_upload_size_mb=1)
    taken = files.presign(chat.res, ALICE, PresignChatFile(filename="big.txt"))
    _post(taken.upload, "big.txt", b"a" * (1024 * 1024 + 5), chat)
    chat.run_jobs()
    row = files.get_file(chat.res, ALICE, taken.file.id)
    assert row.status == "failed" and "1 MB limit" in row.error_message and chat.keys("chat") == []


def test_an_arrival_that_failed_every_delivery_fails_its_file_and_is_not_kept(chat):
    # The chat arrival queue's dead letter (functions/chat_arrival): the pending row says why.
    from sluice.chat.arrivals import ARRIVAL_FAILED

    taken = files.presign(chat.res, ALICE, PresignChatFile(filename="minutes.txt"))
    _post(taken.upload, "minutes.txt", b"Minutes", chat)
    [event] = chat.jobs
    chat.jobs.clear()
    chat.dead_letter(event)
    row = files.get_file(chat.res, ALICE, taken.file.id)
    assert (row.status, row.error_message) == ("failed", ARRIVAL_FAILED)
    assert chat.keys("chat") == []


def test_the_attachment_worker_ignores_what_is_not_an_attachment_job(chat):
    # Arrivals have a queue of their own now; an S3 event reaching the chat queue changes nothing.
    from sluice.chat import worker

    taken = files.presign(chat.res, ALICE, PresignChatFile(filename="minutes.txt"))
    _post(taken.upload, "minutes.txt", b"Minutes", chat)
    [event] = chat.jobs
    worker.on_message(chat.res, json.dumps(event), lambda: 1e9)
    worker.on_dead_letter(chat.res, json.dumps(event))
    assert files.get_file(chat.res, ALICE, taken.file.id).status == "pending"
    assert chat.keys("chat-incoming/") == [taken.upload["fields"]["key"]]


def test_presign_refuses_a_name_sluice_cannot_read_or_a_size_over_the_ceiling(chat):
    with pytest.raises(UnsupportedTypeError):
        files.presign(chat.res, ALICE, PresignChatFile(filename="tool.exe"))
    with pytest.raises(FileTooLargeError):
        files.presign(chat.res, ALICE, PresignChatFile(filename="a.txt", size=11 * 1024 * 1024))
    assert chat.rows("SELECT count(*) AS n FROM chat_files")[0]["n"] == 0


def test_download_and_delete_are_the_owners_only(chat):
    row = files.upload(chat.res, ALICE, "mine.txt", b"mine")
    url = files.download_url(chat.res, files.get_file(chat.res, ALICE, row.id))
    assert url is not None and row.storage_path in httpx.URL(url).path
    for attempt in (lambda: files.get_file(chat.res, MALLORY, row.id),
                    lambda: files.delete_file(chat.res, MALLORY, row.id),
                    lambda: files.pages(chat.res, MALLORY, row.id, None)):
        with pytest.raises(NotFoundError) as refused:
            attempt()
        assert refused.value.body()["error"] == {"code": "NOT_FOUND", "message": "File not found", "details": {}}
    with pytest.raises(NotFoundError):
        files.get_file(chat.res, ALICE, "not-a-uuid")
    assert chat.keys("chat/") == [row.storage_path]
    files.delete_file(chat.res, ALICE, row.id)
    assert chat.keys("chat/") == [] and chat.rows("SELECT count(*) AS n FROM chat_files")[0]["n"] == 0


def test_tiff_pages_are_capped_and_the_cap_is_said(chat):
    chat.settings(chat_tiff_max_inline_pages=3)
    row = files.upload(chat.res, ALICE, "scan.tiff", tiff_bytes(7))
    assert row.file_type == "image" and row.mime_type == "image/tiff" and row.preview is None
    result = files.pages(chat.res, ALICE, row.id, None)
    assert result.rendered.page_count == 7 and [p.number for p in result.rendered.pages] == [1, 2, 3]
    assert result.rendered.left_out_by_cap == 4
    assert all(p.png.startswith(b"\x89PNG") for p in result.rendered.pages)
    fewer = files.pages(chat.res, ALICE, row.id, 2)
    assert len(fewer.rendered.pages) == 2 and fewer.rendered.left_out_by_cap == 5
    more = files.pages(chat.res, ALICE, row.id, 50)  # asking past the cap gets the cap
    assert len(more.rendered.pages) == 3
    pdf = files.upload(chat.res, ALICE, "two.pdf", pdf_bytes(["one", "two"]))
    assert len(files.pages(chat.res, ALICE, pdf.id, None).rendered.pages) == 2
    text = files.upload(chat.res, ALICE, "a.txt", b"text")
    with pytest.raises(ValidationError):
        files.pages(chat.res, ALICE, text.id, None)


def test_a_message_links_only_the_senders_own_unlinked_files(chat):
    cid = str(conversations.create_conversation(chat.res, ALICE, NewConversation()).id)
    mine = files.upload(chat.res, ALICE, "a.txt", words(20).encode())
    also_mine = files.upload(chat.res, ALICE, "b.txt", words(20).encode())
    theirs = files.upload(chat.res, MALLORY, "c.txt", b"mallory")
    # WHEN a message names one of mine and another user's: refused whole, 404, nothing linked
    with pytest.raises(NotFoundError) as refused:
        conversations.post_message(chat.res, ALICE, cid, NewMessage(text="hi", file_ids=[mine.id, theirs.id]))
    assert refused.value.message == "File not found"
    assert chat.rows("SELECT count(*) AS n FROM chat_messages")[0]["n"] == 0
    assert chat.rows("SELECT count(*) AS n FROM chat_files WHERE message_id IS NOT NULL")[0]["n"] == 0
    # AND my own files link
    sent = conversations.post_message(chat.res, ALICE, cid, NewMessage(text="see", file_ids=[mine.id]))
    assert [f.id for f in sent.files] == [mine.id] and sent.files[0].message_id == sent.message.id
    # AND a file already on a message is refused, with the other file left unlinked
    with pytest.raises(ConflictError):
        conversations.post_message(chat.res, ALICE, cid, NewMessage(text="again",
                                                                    file_ids=[also_mine.id, mine.id]))
    assert files.get_file(chat.res, ALICE, also_mine.id).message_id is None
    # AND another user cannot post in my conversation
    with pytest.raises(NotFoundError) as other:
        conversations.post_message(chat.res, MALLORY, cid, NewMessage(text="x"))
    assert other.value.message == "Conversation not found"
    with pytest.raises(NotFoundError):
        conversations.get_conversation(chat.res, MALLORY, str(uuid.uuid4()))
