"""Where a Markdown text's sections begin: ATX headings outside fenced code blocks.

Only the structure is found here; splitting.py turns sections into chunks.
Headings on consecutive lines (blank lines between them allowed) form one
heading block — "# Guide" directly followed by "## Install" — so a title with
no text of its own becomes the context of the section under it instead of a
chunk that holds nothing but a title.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# CommonMark: up to three spaces of indent, 1-6 '#', then a space, a tab or the
# line's end; "#hashtag" is text. \r allows CRLF text split on "\n".
_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t\r]|$)")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t\r]*$")


@dataclass(frozen=True)
class Section:
    """A run of text from one heading block to the next.

    ``heading`` is the span of the heading block (``None`` for text before the
    first heading); ``body`` runs from the block's end to the section's end,
    whitespace not yet trimmed.
    """

    heading: tuple[int, int] | None
    body: tuple[int, int]


def find_sections(text: str) -> list[Section]:
    sections: list[Section] = []
    section_start = 0
    block: tuple[int, int] | None = None
    body_seen = False  # non-blank text since the current heading block
    fence: str | None = None  # the open fence's marker, e.g. "```" or "~~~~"

    pos = 0
    for line in text.split("\n"):
        line_start, line_end = pos, pos + len(line)
        pos = line_end + 1
        if fence is not None:
            closing = _FENCE_CLOSE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = None
            body_seen = True
            continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            fence = opening.group(1)
            body_seen = True
            continue
        if _HEADING.match(line):
            heading_start = line_start + len(line) - len(line.lstrip())
            heading_end = line_start + len(line.rstrip())
            if block is not None and not body_seen:
                block = (block[0], heading_end)
                continue
            _close(sections, block, section_start, line_start)
            section_start = line_start
            block = (heading_start, heading_end)
            body_seen = False
            continue
        if line.strip():
            body_seen = True
    _close(sections, block, section_start, len(text))
    return sections


def _close(sections: list[Section], block: tuple[int, int] | None, start: int, end: int) -> None:
    body_start = block[1] if block is not None else start
    if block is None and start == end:
        return
    sections.append(Section(heading=block, body=(body_start, end)))
