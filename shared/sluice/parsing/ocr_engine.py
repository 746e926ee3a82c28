"""The seam every OCR engine plugs into: what it is given, what it answers (sluice.parsing.ocr picks one).

A module of its own so that an engine (sluice.parsing.textract) imports the seam without importing
the module that chooses engines, which imports it in turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class PageImage:
    number: int  # 1-based page number
    png: bytes
    dpi: int


@dataclass(frozen=True)
class Recognised:
    number: int
    # None when the page could not be read; ``error`` then says why (counted in the document's note).
    text: str | None
    error: str | None


class PageCache(Protocol):
    """The pages an out-of-child engine (Textract) already recognised for this document and attempt, kept
    outside the process so that a redelivery of the same parse sends none of them again (issue 37)."""

    def load(self) -> dict[int, str]:
        """Page number to recognised text; empty when nothing is kept."""
        ...

    def keep(self, pages: dict[int, str]) -> None:
        ...


class OcrEngine(Protocol):
    name: str  # "tesseract" | "textract"

    def languages(self) -> frozenset[str] | None:
        """The language codes this engine can read; None when the engine decides (Textract)."""
        ...

    def recognise(self, pages: Sequence[PageImage], languages: str) -> list[Recognised]:
        """One ``Recognised`` per page, in order; a page it could not read has text None."""
        ...
