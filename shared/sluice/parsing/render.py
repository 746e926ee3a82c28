"""Pages of a TIFF or a PDF rendered to PNG, for a model that reads images (seed 000, "TIFF").

Bounded three ways: at most ``max_pages`` pages, each scaled so its longer side is
at most ``max_side`` pixels, and all of them together at most ``max_bytes`` of
PNG. A page past any bound is left out and counted, never silently dropped.
Run it through ``render_isolated`` (sluice.parsing.isolation): the file is a user's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from sluice.errors import ParseError
from sluice.parsing.kinds import FileKind

log = logging.getLogger(__name__)

RENDERABLE = frozenset({"tif", "pdf"})
# Pages are drawn at up to this resolution, and never wider or taller than max_side pixels.
PDF_DPI = 150


@dataclass
class RenderedPage:
    number: int
    width: int
    height: int
    png: bytes


@dataclass
class RenderedPages:
    page_count: int
    pages: list[RenderedPage] = field(default_factory=list)
    # Pages not shown because the page cap was reached, and because the size budget was.
    left_out_by_cap: int = 0
    left_out_by_size: int = 0


def render_pages(data: bytes, kind: FileKind, *, max_pages: int, max_side: int, max_bytes: int) -> RenderedPages:
    if kind.kind not in RENDERABLE:
        raise ParseError("Pages can be shown for TIFF images and PDFs only.")
    import pymupdf

    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    try:
        document = pymupdf.open(stream=data, filetype="tiff" if kind.kind == "tif" else "pdf")
    except Exception as exc:
        log.info("pymupdf could not open the file to render: %s", exc)
        raise ParseError("This file could not be opened to show its pages: it is damaged or incomplete.") from None
    with document:
        if document.needs_pass:
            raise ParseError("This PDF is password-protected; its pages cannot be shown.")
        out = RenderedPages(page_count=document.page_count)
        shown = min(document.page_count, max_pages)
        out.left_out_by_cap = document.page_count - shown
        spent = 0
        for index in range(shown):
            page = document.load_page(index)
            rect = page.rect
            zoom = max_side / max(rect.width, rect.height, 1.0)
            # At most PDF_DPI of the page's physical size (a TIFF page's size comes from its resolution).
            zoom = min(zoom, PDF_DPI / 72)
            pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
            png = pixmap.tobytes("png")
            if spent + len(png) > max_bytes:
                # The answer has no room for this page, nor (in order) for the ones after it.
                out.left_out_by_size = shown - index
                break
            spent += len(png)
            out.pages.append(RenderedPage(number=index + 1, width=pixmap.width, height=pixmap.height, png=png))
        return out

