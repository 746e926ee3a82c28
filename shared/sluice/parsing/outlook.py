"""Outlook messages (.msg): headers and body from the MAPI property streams (SPEC §4, email row).

A .msg is an OLE2 file holding one stream per MAPI property
(``__substg1.0_<id><type>``) plus a fixed-size ``__properties_version1.0``
table for the numeric ones (dates, code page). Attachments are listed by name
and never opened: an attached file is its own document, uploaded as one.
"""

from __future__ import annotations

import datetime as dt
import io
import logging
import struct
from typing import Any

from sluice.errors import ParseError
from sluice.parsing.budget import ParseBudget, TextBudget
from sluice.parsing.document import ParsedDocument

log = logging.getLogger(__name__)

_PT_STRING8 = "001E"
_PT_UNICODE = "001F"
_PT_BINARY = "0102"
_PR_SUBJECT = "0037"
_PR_SENDER_NAME = "0C1A"
_PR_SENDER_EMAIL = "0C1F"
_PR_SENT_REPRESENTING_NAME = "0042"
_PR_SENT_REPRESENTING_EMAIL = "0065"
_PR_SMTP_SENDER = "5D01"
_PR_DISPLAY_TO = "0E04"
_PR_DISPLAY_CC = "0E03"
_PR_BODY = "1000"
_PR_HTML = "1013"
_PR_TRANSPORT_HEADERS = "007D"
_PR_ATTACH_LONG_FILENAME = "3707"
_PR_ATTACH_FILENAME = "3704"
_PR_DISPLAY_NAME = "3001"
_PR_ATTACH_DATA_OBJ = "3701"
# Numeric properties in the fixed table: (property id, type) as the table stores them.
_TAG_CLIENT_SUBMIT_TIME = 0x00390040
_TAG_DELIVERY_TIME = 0x0E060040
_TAG_MESSAGE_CODEPAGE = 0x3FFD0003
_TAG_INTERNET_CPID = 0x3FDE0003
_FILETIME_EPOCH = dt.datetime(1601, 1, 1, tzinfo=dt.UTC)


class _Message:
    def __init__(self, ole: Any, prefix: str, header_size: int) -> None:
        self.ole = ole
        self.prefix = prefix
        self.fixed = self._fixed_properties(header_size)
        # 8-bit strings are in the message code page; the internet code page describes the
        # body as sent and is only a guess for them, tried strictly before Windows-1252.
        self.codepages = [
            codec
            for codec in (
                _codec(self.fixed.get(_TAG_MESSAGE_CODEPAGE)),
                _codec(self.fixed.get(_TAG_INTERNET_CPID)),
                "cp1252",
            )
            if codec
        ]

    def _fixed_properties(self, header_size: int) -> dict[int, int]:
        path = self.prefix + "__properties_version1.0"
        if not self.ole.exists(path):
            return {}
        raw = self.ole.openstream(path).read()
        values: dict[int, int] = {}
        for at in range(header_size, len(raw) - 15, 16):
            tag, _flags, value = struct.unpack_from("<LLQ", raw, at)
            values[tag] = value
        return values

    def _stream(self, name: str) -> bytes | None:
        path = self.prefix + name
        return self.ole.openstream(path).read() if self.ole.exists(path) else None

    def string(self, prop: str) -> str | None:
        raw = self._stream(f"__substg1.0_{prop}{_PT_UNICODE}")
        if raw is not None:
            return raw.decode("utf-16-le", "replace").rstrip("\x00")
        raw = self._stream(f"__substg1.0_{prop}{_PT_STRING8}")
        if raw is None:
            return None
        for codec in self.codepages:
            try:
                return raw.decode(codec).rstrip("\x00")
            except UnicodeDecodeError:
                continue
        return raw.decode("cp1252", "replace").rstrip("\x00")

    def binary(self, prop: str) -> bytes | None:
        return self._stream(f"__substg1.0_{prop}{_PT_BINARY}")

    def date(self) -> str | None:
        for tag in (_TAG_CLIENT_SUBMIT_TIME, _TAG_DELIVERY_TIME):
            filetime = self.fixed.get(tag)
            if filetime:
                try:
                    when = _FILETIME_EPOCH + dt.timedelta(microseconds=filetime // 10)
                except OverflowError:
                    continue
                return when.strftime("%Y-%m-%d %H:%M UTC")
        headers = self.string(_PR_TRANSPORT_HEADERS) or ""
        for line in headers.splitlines():
            if line.lower().startswith("date:"):
                return line[5:].strip()
        return None


def _codec(codepage: int | None) -> str | None:
    if not codepage:
        return None
    name = {65001: "utf-8", 20127: "ascii", 28591: "latin-1", 1200: "utf-16-le"}.get(codepage, f"cp{codepage}")
    try:
        "".encode(name)
    except LookupError:
        return None
    return name


def _sender(message: _Message) -> str | None:
    name = message.string(_PR_SENDER_NAME) or message.string(_PR_SENT_REPRESENTING_NAME)
    email = next(
        (
            value
            for value in (
                message.string(_PR_SMTP_SENDER),
                message.string(_PR_SENDER_EMAIL),
                message.string(_PR_SENT_REPRESENTING_EMAIL),
            )
            if value and "@" in value
        ),
        None,
    )
    if name and email and email not in name:
        return f"{name} <{email}>"
    return name or email


def _attachments(ole: Any) -> list[str]:
    names: list[str] = []
    storages = sorted(
        {entry[0] for entry in ole.listdir(streams=True, storages=True) if entry[0].startswith("__attach_version1.0_")}
    )
    for storage in storages:
        attachment = _Message(ole, storage + "/", 8)
        name = (
            attachment.string(_PR_ATTACH_LONG_FILENAME)
            or attachment.string(_PR_ATTACH_FILENAME)
            or attachment.string(_PR_DISPLAY_NAME)
        )
        if not name and ole.exists(f"{storage}/__substg1.0_{_PR_ATTACH_DATA_OBJ}000D"):
            embedded = _Message(ole, f"{storage}/__substg1.0_{_PR_ATTACH_DATA_OBJ}000D/", 24)
            name = (embedded.string(_PR_SUBJECT) or "message") + " (attached message)"
        names.append(name or "(unnamed attachment)")
    return names


def read_msg(data: bytes, budget: ParseBudget) -> ParsedDocument:
    import olefile

    try:
        ole = olefile.OleFileIO(io.BytesIO(data))
    except Exception as exc:
        log.info("olefile could not open the message: %s", exc)
        raise ParseError("This Outlook message could not be read: the file is damaged or incomplete.") from None
    with ole:
        message = _Message(ole, "", 32)
        text = TextBudget(budget.max_chars)
        for label, value in (
            ("From", _sender(message)),
            ("To", message.string(_PR_DISPLAY_TO)),
            ("Cc", message.string(_PR_DISPLAY_CC)),
            ("Subject", message.string(_PR_SUBJECT)),
            ("Date", message.date()),
        ):
            if value and value.strip():
                text.separate("\n")
                text.add(f"{label}: {' '.join(value.split())}")
        text.separate("\n")
        text.add("\n")
        _body(message, text)
        attachments = _attachments(ole)
    if attachments:
        text.separate("\n")
        text.add("\nAttachments (listed, not read):\n" + "\n".join(f"- {name}" for name in attachments))
        count = len(attachments)
        text.note(f"{count} attachment{'s' if count != 1 else ''} listed, not read")
    return text.finish()


def _body(message: _Message, text: TextBudget) -> None:
    from sluice.parsing.text import decode_text, html_encoding, html_text

    body = message.string(_PR_BODY)
    if body and body.strip():
        text.add(body.replace("\r\n", "\n").strip())
        return
    html = message.binary(_PR_HTML)
    if html is None:
        as_string = message.string(_PR_HTML)
        html = as_string.encode("utf-8") if as_string else None
    if html:
        declared = html_encoding(html) or message.codepages[0]
        html_text(decode_text(html, allow_legacy=True, declared=declared, prefer_utf8=True), text)
