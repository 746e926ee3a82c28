"""PowerPoint presentations (.pptx, .pptm): shape text, table cells, charts and notes; pages are slides."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

from sluice.errors import ParseError
from sluice.parsing.budget import ParseBudget, TextBudget
from sluice.parsing.document import ParsedDocument
from sluice.parsing.strict_ooxml import as_transitional

log = logging.getLogger(__name__)


class _Stop(Exception):
    pass


def _open(data: bytes) -> Any:
    import pptx

    # python-pptx accepts both the .pptx and the macro-enabled .pptm main part.
    return pptx.Presentation(io.BytesIO(as_transitional(data)))


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
                _emit(_shapes(slide.shapes, slide.part), text)
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


def _shapes(shapes: Any, part: Any) -> Iterator[str]:
    for shape in shapes:
        if getattr(shape, "shape_type", None) is not None and _is_group(shape):
            yield from _shapes(shape.shapes, part)
            continue
        diagram = _diagram_text(shape, part)
        if diagram is not None:
            yield from diagram
            continue
        if getattr(shape, "has_chart", False):
            yield from _chart_text(shape)
            continue
        if getattr(shape, "has_table", False):
            for row in shape.table.rows:
                cells = [" ".join(cell.text.split()) for cell in row.cells]
                yield "\t".join(cells)
            continue
        if getattr(shape, "has_text_frame", False):
            # Vertical tab is how PowerPoint stores a soft line break in a run.
            yield from shape.text_frame.text.replace("\x0b", "\n").splitlines()


def _chart_text(shape: Any) -> list[str]:
    """A chart's title, its series' names and its categories: what a reader of the slide sees in words."""
    try:
        chart = shape.chart
        lines = [chart.chart_title.text_frame.text] if chart.has_title and chart.chart_title.has_text_frame else []
        series = [s.name for plot in chart.plots for s in plot.series if s.name]
        categories = [str(c) for c in chart.plots[0].categories if str(c).strip()] if len(chart.plots) else []
    except Exception as exc:  # an unreadable chart part: the rest of the slide still counts
        log.info("a chart could not be read: %s", exc)
        return []
    if series:
        lines.append("Series: " + ", ".join(series))
    if categories:
        lines.append("Categories: " + ", ".join(categories))
    return lines


_DIAGRAM = "{http://schemas.openxmlformats.org/drawingml/2006/diagram}"
_DRAWING = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_REL_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}dm"


def _diagram_text(shape: Any, part: Any) -> list[str] | None:
    """A SmartArt graphic's text, one line per node, from its diagram data part (python-pptx sees
    no text in the frame itself); None when the shape is not a SmartArt graphic."""
    from pptx.oxml import parse_xml

    ids = next(shape._element.iter(f"{_DIAGRAM}relIds"), None)
    if ids is None or not ids.get(_REL_ID):
        return None
    try:
        data = parse_xml(part.related_part(ids.get(_REL_ID)).blob)
    except Exception as exc:  # a dangling or unreadable diagram: the rest of the slide still counts
        log.info("a SmartArt graphic's data could not be read: %s", exc)
        return []
    lines = []
    for point in data.iter(f"{_DIAGRAM}pt"):
        for paragraph in point.iter(f"{_DRAWING}p"):
            line = "".join(t.text or "" for t in paragraph.iter(f"{_DRAWING}t"))
            if line.strip():
                lines.append(line)
    return lines


def _is_group(shape: Any) -> bool:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    try:
        return bool(shape.shape_type == MSO_SHAPE_TYPE.GROUP)
    except NotImplementedError:
        return False
