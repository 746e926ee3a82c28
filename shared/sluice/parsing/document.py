"""What a reader hands back: the text, its pages, notes, and — for archives — the members."""

from __future__ import annotations

from dataclasses import dataclass, field

from sluice.parsing.images import ExtractedImage, ImagePlacement
from sluice.parsing.kinds import FileKind

PREVIEW_LINES = 3
PREVIEW_MAX_CHARS = 240


@dataclass
class PageText:
    number: int
    start: int
    end: int


@dataclass
class ArchiveMember:
    path: str
    size: int
    kind: FileKind | None
    skipped_reason: str | None


@dataclass
class ParsedDocument:
    text: str
    pages: list[PageText] | None = None
    notes: list[str] = field(default_factory=list)
    truncated: bool = False
    members: list[ArchiveMember] | None = None
    # R-PARSE-6, only when image description is on: the distinct images, where pages show them, and
    # how many were left out (over the cap, or unreadable).
    images: list[ExtractedImage] | None = None
    placements: list[ImagePlacement] | None = None
    images_over_cap: int = 0
    images_unreadable: int = 0
    # R-PARSE-7: which parser read the document, and how many of its pages OCR recognised (None: OCR off).
    parser: str | None = None
    ocr_pages: int | None = None

    @property
    def word_count(self) -> int:
        return len(self.text.split())

    @property
    def preview(self) -> str | None:
        """R-PARSE-4: the first three non-empty lines, at most 240 characters; None without text."""
        lines: list[str] = []
        for line in self.text.splitlines():
            stripped = line.strip()
            if stripped:
                lines.append(stripped)
                if len(lines) == PREVIEW_LINES:
                    break
        if not lines:
            return None
        preview = "\n".join(lines)
        if len(preview) > PREVIEW_MAX_CHARS:
            preview = preview[: PREVIEW_MAX_CHARS - 1].rstrip() + "…"
        return preview
