"""The seam between the parser and an OCR engine (R-PARSE-7): rendered pages in, text per page out.

A minimal copy of the seam the ``ocr`` branch owns (issue 28), so the Textract engine can be built and
tested alone; the names and fields are the agreed ones, and the lead reconciles the two at merge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class PageImage:
    number: int  # 1-based
    png: bytes
    dpi: int


@dataclass(frozen=True)
class Recognised:
    number: int
    text: str | None  # None: the page was not read, and ``error`` says why
    error: str | None


class OcrEngine(Protocol):
    name: str

    def languages(self) -> frozenset[str] | None:
        """The languages this engine has data for; None: the engine decides by itself."""
        ...

    def recognise(self, pages: Sequence[PageImage], languages: str) -> list[Recognised]: ...
