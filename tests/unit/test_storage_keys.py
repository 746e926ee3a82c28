"""Filename sanitising and key naming (R-UP-5)."""

from __future__ import annotations

import re
import uuid

from hypothesis import given
from hypothesis import strategies as st

from sluice.storage import inbox_kb_id, parse_stage_key, rag_key, safe_filename, stage_key
from sluice.storage.keys import MAX_NAME_CHARS


def test_traversal_becomes_a_flat_name():
    assert safe_filename("../../etc/passwd") == "etc_passwd"
    assert safe_filename("..\\..\\windows\\system32\\cmd.exe") == "windows_system32_cmd.exe"
    assert safe_filename("/abs/path/report.pdf") == "abs_path_report.pdf"


def test_control_characters_and_empty_names():
    assert safe_filename("re\x00po\x1frt\n.pdf") == "report.pdf"
    assert safe_filename("") == "file"
    assert safe_filename("..") == "file"
    assert safe_filename("...") == "file"


def test_long_names_keep_their_extension():
    name = safe_filename("a" * 500 + ".docx")
    assert len(name) == MAX_NAME_CHARS and name.endswith(".docx")


def test_two_uploads_of_one_name_never_collide():
    a, b = rag_key("handbook", "report.csv"), rag_key("handbook", "report.csv")
    assert a != b
    assert re.fullmatch(r"rag/handbook/[0-9a-f-]{36}_report\.csv", a)


def test_inbox_addresses_a_base():
    kb = uuid.uuid4()
    assert inbox_kb_id(f"inbox/{kb}/a/b.pdf") == kb
    assert inbox_kb_id(f"inbox/{kb}/") is None
    assert inbox_kb_id("inbox/not-a-uuid/a.pdf") is None
    assert inbox_kb_id(f"rag/{kb}/a.pdf") is None


def test_stage_keys_round_trip():
    doc = uuid.uuid4()
    ref = parse_stage_key(stage_key("chunks", doc, 3))
    assert ref is not None and (ref.stage, ref.document_id, ref.attempt) == ("chunks", doc, 3)
    assert parse_stage_key("stage/parsed/nope.1.json") is None


@given(st.text(max_size=400))
def test_sanitised_names_are_always_safe(name: str):
    safe = safe_filename(name)
    assert 0 < len(safe) <= MAX_NAME_CHARS
    assert re.fullmatch(r"[A-Za-z0-9._-]+", safe)
    assert "/" not in safe and "\\" not in safe and ".." not in safe.split("_")
    assert not safe.startswith(".")


def test_a_download_name_cannot_add_content_disposition_parameters():
    # Probed: a quote in the stored name closed filename="..." and let the rest add parameters.
    from email.message import Message
    from urllib.parse import unquote

    from sluice.storage.s3 import attachment

    header = attachment('report.pdf"; filename*=UTF-8\'\'evil.html; x="')
    message = Message()
    message["Content-Disposition"] = header
    assert message.get_content_disposition() == "attachment"
    # exactly two parameters, as a client splits them; the exact name comes back from filename*
    params = re.findall(r';\s*([^=;\s]+)=("(?:[^"\\]|\\.)*"|[^;]*)', header)
    assert [name for name, _ in params] == ["filename", "filename*"]
    charset, _, encoded = params[1][1].partition("''")
    assert (charset, unquote(encoded)) == ("UTF-8", 'report.pdf"; filename*=UTF-8\'\'evil.html; x="')
    assert '"' not in params[0][1].strip('"')
    assert attachment("Übersicht 2026.pdf") == (
        "attachment; filename=\"Ubersicht_2026.pdf\"; filename*=UTF-8''%C3%9Cbersicht%202026.pdf")


def test_chat_keys_are_the_owners_and_never_collide():
    from sluice.storage import chat_incoming_file_id, chat_incoming_key, chat_key

    a, b = chat_key("alice", "report.csv"), chat_key("alice", "report.csv")
    assert a != b and re.fullmatch(r"chat/alice/[0-9a-f-]{36}_report\.csv", a)
    # the user id is the identity provider's sub: made storage-safe like a name
    assert re.fullmatch(r"chat/evil_x/[0-9a-f-]{36}_etc_passwd", chat_key("../evil/x", "../../etc/passwd"))
    file_id = uuid.uuid4()
    assert chat_incoming_key(file_id, "a b.pdf") == f"chat-incoming/{file_id}/a_b.pdf"
    assert chat_incoming_file_id(chat_incoming_key(file_id, "x.txt")) == file_id
    assert chat_incoming_file_id(f"incoming/{file_id}/x.txt") is None
    assert chat_incoming_file_id("chat-incoming/not-a-uuid/x.txt") is None
