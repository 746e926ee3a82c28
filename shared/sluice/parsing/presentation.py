"""PowerPoint presentations (.pptx, .pptm): shape text, table cells and notes; pages are slides."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

from sluice.errors import ParseError
from sluice.parsing.budget import ParseBudget, TextBudget
from sluice.parsing.document import ParsedDocument

log = logging.getLogger(__name__)


class _Stop(Exception):
    pass


def _open(data: bytes) -> Any:
    import pptx

    # python-pptx accepts both the .pptx and the macro-enabled .pptm main part.
    return pptx.Presentation(io.BytesIO(data))


def read_pptx(data: bytes, budget: ParseBudget) -> ParsedDocument:
    try:
        presentation = _open(data)
        slides = list(presentation.slides)
    except Exception as exc:
        log.info("python-pptx could not open the presentation: %s", exc)
        raise ParseError("This PowerPoint presentation could not be read: the file is damaged or incomplete.") from None
    text = TextBudget(budget.max_chars)
    try:
        for number, slide in enumerate(slides, start=1):
            text.separate("\n\n")
            text.start_page(number)
            try:
                _emit(_shapes(slide.shapes), text)
                if slide.has_notes_slide:
                    notes = slide.notes_slide.notes_text_frame
                    if notes is not None:
                        _emit(iter(notes.text.splitlines()), text)
            finally:
                text.end_page()
    except _Stop:
        pass
    return text.finish()


def _emit(lines: Iterator[str], text: TextBudget) -> None:
    for line in lines:
        line = line.rstrip()
        if not line.strip():
            continue
        text.separate("\n")
        if not text.add(line):
            raise _Stop


def _shapes(shapes: Any) -> Iterator[str]:
    for shape in shapes:
        if getattr(shape, "shape_type", None) is not None and _is_group(shape):
            yield from _shapes(shape.shapes)
            continue
        if getattr(shape, "has_table", False):
            for row in shape.table.rows:
                cells = [" ".join(cell.text.split()) for cell in row.cells]
                yield "\t".join(cells)
            continue
        if getattr(shape, "has_text_frame", False):
            # Vertical tab is how PowerPoint stores a soft line break in a run.
            yield from shape.text_frame.text.replace("\x0b", "\n").splitlines()


def _is_group(shape: Any) -> bool:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    try:
        return bool(shape.shape_type == MSO_SHAPE_TYPE.GROUP)
    except NotImplementedError:
        return False
