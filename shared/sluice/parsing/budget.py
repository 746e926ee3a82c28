"""The parse budget and the text accumulator the readers spend it through (R-PARSE-1, R-PARSE-2).

The cap is a budget the readers spend, not a cut after the parse: a reader asks
``TextBudget.add`` whether to go on, and stops at the page, row or paragraph
that crossed the cap instead of producing the whole text and throwing most away.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sluice.config import ParsingSettings
from sluice.parsing.document import PageText, ParsedDocument


@dataclass(frozen=True)
class ParseBudget:
    max_chars: int
    pdf_max_pages: int
    sheet_max_cells: int
    archive_max_entries: int
    archive_max_bytes: int
    archive_max_ratio: int
    archive_max_member_bytes: int
    timeout_seconds: int
    memory_mb: int

    @classmethod
    def from_settings(cls, settings: ParsingSettings) -> ParseBudget:
        return cls(
            max_chars=settings.parsed_text_max_chars,
            pdf_max_pages=settings.pdf_max_pages,
            sheet_max_cells=settings.sheet_max_cells,
            archive_max_entries=settings.archive_max_entries,
            archive_max_bytes=settings.archive_max_bytes,
            archive_max_ratio=settings.archive_max_ratio,
            archive_max_member_bytes=settings.archive_max_member_bytes,
            timeout_seconds=settings.parse_timeout_seconds,
            memory_mb=settings.parse_memory_mb,
        )


def memory_sentence(memory_mb: int) -> str:
    return f"This document needs more memory to read than Sluice allows for one file ({memory_mb:,} MB)."


def truncation_marker(max_chars: int) -> str:
    return f"\n\n[… the rest of the document is left out: it exceeds the {max_chars:,}-character limit]"


def remove_nul(text: str) -> str:
    # R-PARSE-2: PostgreSQL text cannot hold NUL, and it is never meaningful in a document.
    return text.replace("\x00", "") if "\x00" in text else text


_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(text: str) -> str:
    """Lone surrogates (from broken UTF-16 in a PDF or a JSON escape) cannot be encoded as
    UTF-8, so PostgreSQL would refuse the whole text: each becomes U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


class TextBudget:
    """Collects text up to ``max_chars``; ``add`` answers whether the reader should go on."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self._parts: list[str] = []
        self._length = 0
        self.truncated = False
        self.notes: list[str] = []
        self._pages: list[PageText] | None = None
        self._page_number: int | None = None
        self._page_start = 0

    @property
    def length(self) -> int:
        return self._length

    @property
    def full(self) -> bool:
        return self.truncated

    def add(self, text: str) -> bool:
        """Append ``text``; False once the cap is reached (the reader stops there)."""
        if self.truncated:
            return False
        text = remove_nul(text)
        room = self.max_chars - self._length
        if len(text) > room:
            text = text[:room]
            self.truncated = True
        self._parts.append(text)
        self._length += len(text)
        return not self.truncated

    def separate(self, separator: str = "\n") -> None:
        """Add ``separator`` unless nothing was written yet or the text already ends with it."""
        if self._length and not self.truncated and not self._ends_with(separator):
            self.add(separator)

    def _ends_with(self, suffix: str) -> bool:
        tail = ""
        for part in reversed(self._parts):
            tail = part + tail
            if len(tail) >= len(suffix):
                break
        return tail.endswith(suffix)

    def start_page(self, number: int) -> None:
        if self._pages is None:
            self._pages = []
        self._page_number = number
        self._page_start = self._length

    def end_page(self) -> None:
        if self._pages is None or self._page_number is None:
            return
        self._pages.append(PageText(number=self._page_number, start=self._page_start, end=self._length))
        self._page_number = None

    def note(self, sentence: str) -> None:
        self.notes.append(sentence)

    def finish(self, **extra: Any) -> ParsedDocument:
        if self._page_number is not None:
            self.end_page()
        text = storable("".join(self._parts))
        if self.truncated:
            text += truncation_marker(self.max_chars)
        return ParsedDocument(text=text, pages=self._pages, notes=list(self.notes), truncated=self.truncated, **extra)
