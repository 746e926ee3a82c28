"""Splitting a document's text into chunks: recursive, markdown and fixed (R-CHUNK-1).

Every chunk is located in the original text by ``char_start``/``char_end``
(half-open), which is what its page span is computed from. For ``recursive``
and ``fixed``, ``content == text[char_start:char_end]``. For ``markdown``, a
chunk of a section with a heading reads ``heading block + "\\n\\n" + body``,
where the body is ``text[body_start:char_end]``; the first chunk of a section
starts its span at the heading (so the heading's page counts), later ones at
their body, the heading in front of them being a copy.

Sizes are counted in characters, the unit of ``chunk_size``. No chunk is
longer than ``chunk_size`` — the one exception is a ``fixed`` line longer than
it, which is emitted whole with a warning rather than cut mid-line.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sluice.chunking.config import ChunkingPlan
from sluice.chunking.markdown import find_sections

logger = logging.getLogger("sluice.chunking")

# Blank lines may hold spaces or a stray \r; a run of them is one separator.
_PARAGRAPH = re.compile(r"\n\s*\n")
_LINE = re.compile(r"\n")
_WORD = re.compile(r"\s+")
_RECURSIVE_SEPARATORS = (_PARAGRAPH, _LINE, _WORD)

# A heading repeated in every chunk of its section may take at most half the
# size, so the section's own text still gets the larger share of each chunk.
_MAX_HEADING_SHARE = 0.5
_HEADING_JOIN = "\n\n"

Span = tuple[int, int]


@dataclass(frozen=True)
class PageSpan:
    """Page ``number`` (1-based) occupies ``text[start:end]``."""

    number: int
    start: int
    end: int


@dataclass(frozen=True)
class Chunk:
    index: int
    content: str
    char_start: int
    char_end: int
    page_start: int | None
    page_end: int | None


@dataclass(frozen=True)
class _Cut:
    start: int
    end: int
    content: str


def split_text(
    text: str,
    plan: ChunkingPlan,
    *,
    pages: Sequence[PageSpan | tuple[int, int, int]] | None = None,
) -> list[Chunk]:
    """Split ``text`` by ``plan``; ``pages`` are ``(page_number, start, end)`` offsets into ``text``.

    A text with nothing but whitespace gives no chunks. A chunk that lies on no
    page (the pages leave it out) has ``None`` for both page fields.
    """
    if plan.strategy == "markdown":
        cuts = _split_markdown(text, plan.chunk_size, plan.chunk_overlap)
    else:
        spans: list[Span] = []
        if plan.strategy == "fixed":
            _split_fixed(text, plan.chunk_size, plan.chunk_overlap, spans)
        else:
            _split_recursive(text, 0, len(text), plan.chunk_size, plan.chunk_overlap, spans)
        cuts = [_Cut(start, end, text[start:end]) for start, end in spans]

    locate = _page_locator(_normalise_pages(pages, len(text))) if pages is not None else None
    chunks = []
    for index, cut in enumerate(cuts):
        page_start, page_end = locate(cut.start, cut.end) if locate else (None, None)
        chunks.append(Chunk(index, cut.content, cut.start, cut.end, page_start, page_end))
    return chunks


def _pieces(text: str, start: int, end: int, separator: re.Pattern[str]) -> list[Span]:
    """The spans between separators in ``text[start:end]``, trimmed, blank ones dropped."""
    pieces: list[Span] = []
    position = start
    for match in separator.finditer(text, start, end):
        _append_trimmed(text, position, match.start(), pieces)
        position = match.end()
    _append_trimmed(text, position, end, pieces)
    return pieces


def _append_trimmed(text: str, start: int, end: int, pieces: list[Span]) -> None:
    piece = text[start:end]
    left = piece.lstrip()
    if left:
        pieces.append((start + len(piece) - len(left), start + len(piece.rstrip())))


class _Packer:
    """Greedily joins pieces, in document order, into chunks of at most ``size``.

    A chunk is the original text from its first piece's start to its last
    piece's end, so the separators between pieces count towards the size.
    When the next piece does not fit, the chunk is emitted and the next one
    starts with the trailing pieces of it that are together at most
    ``overlap`` long and still leave room for that piece — which is why
    overlap is a ceiling, and often less (nothing, when the last piece alone
    is longer than the overlap).
    """

    def __init__(self, size: int, overlap: int, out: list[Span]) -> None:
        self.size, self.overlap, self.out = size, overlap, out
        self.window: deque[Span] = deque()

    def add(self, piece: Span) -> None:
        window = self.window
        if window and piece[1] - window[0][0] > self.size:
            self.out.append((window[0][0], window[-1][1]))
            while window and (window[-1][1] - window[0][0] > self.overlap or piece[1] - window[0][0] > self.size):
                window.popleft()
        window.append(piece)

    def emit_whole(self, piece: Span) -> None:
        """Emit a piece as a chunk of its own; nothing before it or after it shares that chunk."""
        self.flush()
        self.out.append(piece)

    def flush(self) -> None:
        if self.window:
            self.out.append((self.window[0][0], self.window[-1][1]))
            self.window.clear()


def _split_recursive(text: str, start: int, end: int, size: int, overlap: int, out: list[Span]) -> None:
    """Paragraphs, then lines, then words, then characters: the coarsest separator that fits wins.

    Only a piece longer than the size is split at the next separator down; its
    parts are packed together with the pieces around it, so a short title
    before a long paragraph shares a chunk with the paragraph's first words
    rather than making a chunk of its own.
    """
    packer = _Packer(size, overlap, out)
    _pack(text, start, end, 0, packer)
    packer.flush()


def _pack(text: str, start: int, end: int, level: int, packer: _Packer) -> None:
    for piece in _pieces(text, start, end, _RECURSIVE_SEPARATORS[level]):
        if piece[1] - piece[0] <= packer.size:
            packer.add(piece)
        elif level + 1 < len(_RECURSIVE_SEPARATORS):
            _pack(text, piece[0], piece[1], level + 1, packer)
        else:
            _cut_characters(piece, packer)


def _cut_characters(piece: Span, packer: _Packer) -> None:
    # A "word" longer than the size (a URL, a base64 run): windows that overlap
    # by the full ceiling, since every character is a place to cut. Windows,
    # not one piece per character: a megabyte-long run must not become a
    # million pieces.
    start, end = piece
    step = packer.size - packer.overlap
    while start + packer.size < end:
        packer.emit_whole((start, start + packer.size))
        start += step
    # The last window is short: what follows may still join it.
    packer.flush()
    packer.add((start, end))


def _split_fixed(text: str, size: int, overlap: int, out: list[Span]) -> None:
    packer = _Packer(size, overlap, out)
    for line in _pieces(text, 0, len(text), _LINE):
        if line[1] - line[0] <= size:
            packer.add(line)
            continue
        # Cutting inside a line is what this strategy promises not to do; the
        # warning says how long, never what the line says.
        logger.warning(
            "fixed chunking: a line of %d characters is longer than chunk_size %d; emitted whole",
            line[1] - line[0],
            size,
        )
        packer.emit_whole(line)
    packer.flush()


def _split_markdown(text: str, size: int, overlap: int) -> list[_Cut]:
    cuts: list[_Cut] = []
    for section in find_sections(text):
        body_start, body_end = section.body
        if section.heading is None:
            _append_plain(text, body_start, body_end, size, overlap, cuts)
            continue
        heading_start, heading_end = section.heading
        heading = text[heading_start:heading_end]
        if not text[body_start:body_end].strip():
            # A heading with nothing under it (the last line of a document).
            _append_plain(text, heading_start, heading_end, size, overlap, cuts)
            continue
        prefix = heading + _HEADING_JOIN
        if len(prefix) > size * _MAX_HEADING_SHARE:
            logger.warning(
                "markdown chunking: a heading block of %d characters is too long to repeat in "
                "chunks of %d; its section is split as plain text",
                len(heading),
                size,
            )
            _append_plain(text, heading_start, body_end, size, overlap, cuts)
            continue
        budget = size - len(prefix)
        spans: list[Span] = []
        _split_recursive(text, body_start, body_end, budget, min(overlap, budget - 1), spans)
        for number, (start, end) in enumerate(spans):
            cuts.append(_Cut(heading_start if number == 0 else start, end, prefix + text[start:end]))
    return cuts


def _append_plain(text: str, start: int, end: int, size: int, overlap: int, cuts: list[_Cut]) -> None:
    spans: list[Span] = []
    _split_recursive(text, start, end, size, overlap, spans)
    cuts.extend(_Cut(s, e, text[s:e]) for s, e in spans)


def _normalise_pages(pages: Sequence[PageSpan | tuple[int, int, int]], length: int) -> list[PageSpan]:
    spans = sorted(
        (page if isinstance(page, PageSpan) else PageSpan(*page) for page in pages),
        key=lambda page: (page.start, page.end),
    )
    previous_end = 0
    for page in spans:
        # The parse stage produced these offsets; a bad one is its bug, not the user's.
        if not 0 <= page.start <= page.end <= length:
            raise ValueError(f"page {page.number} span {page.start}:{page.end} is outside the text")
        if page.start < previous_end:
            raise ValueError(f"page {page.number} overlaps the page before it")
        previous_end = page.end
    # A page without text (a blank or unreadable one) holds no part of any chunk.
    return [page for page in spans if page.start < page.end]


def _page_locator(pages: list[PageSpan]) -> Callable[[int, int], tuple[int | None, int | None]]:
    starts = [page.start for page in pages]

    def locate(start: int, end: int) -> tuple[int | None, int | None]:
        first = bisect.bisect_right(starts, start) - 1
        if first < 0 or pages[first].end <= start:
            # The chunk begins before the first page or between two pages: its
            # text starts on the next one.
            first += 1
        last = bisect.bisect_right(starts, end - 1) - 1
        if first >= len(pages) or first > last:
            return None, None
        return pages[first].number, pages[last].number

    return locate
