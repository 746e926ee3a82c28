"""Images as knowledge-base documents (R-PARSE-7): a PNG, a JPEG or a TIFF read by OCR, page by page.

Only with OCR on (sluice.ingest.families refuses them otherwise). A multi-page TIFF is read a page
at a time within ``max_pages``; a page OCR could not read is counted in a note, never silently empty.
"""

from __future__ import annotations

import logging
from typing import Any

from sluice.errors import ParseError
from sluice.parsing.budget import ParseBudget, TextBudget
from sluice.parsing.document import ParsedDocument
from sluice.parsing.ocr import OcrPass
from sluice.parsing.ocr_engine import PageImage

log = logging.getLogger(__name__)

_FILETYPES = {"png": "png", "jpg": "jpeg", "tif": "tiff"}
# An image that says nothing of its resolution is taken as a 300-dpi scan.
_ASSUMED_DPI = 300


def read_scanned_image(data: bytes, kind: str, budget: ParseBudget, ocr: OcrPass) -> ParsedDocument:
    import pymupdf as loaded

    pymupdf: Any = loaded
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    try:
        document = pymupdf.open(stream=data, filetype=_FILETYPES[kind])
    except Exception as exc:
        log.info("pymupdf could not open the image: %s", exc)
        raise ParseError("This image could not be read: it is damaged or incomplete.") from None
    with document:
        text = TextBudget(budget.max_chars)
        for index in range(document.page_count):
            if not ocr.has_room():
                ocr.left_out += document.page_count - index
                break
            try:
                image = _page_image(pymupdf, document.load_page(index))
            except Exception as exc:
                log.info("pymupdf could not decode image page %d: %s", index + 1, exc)
                ocr.failed.append((index + 1, "the image could not be decoded"))
                continue
            answer = ocr.read([image])[0]
            text.separate("\n\n")
            text.start_page(index + 1)
            going = text.add((answer.text or "").rstrip() if answer is not None else "")
            text.end_page()
            if not going:
                break
        for sentence in ocr.notes():
            text.note(sentence)
        return text.finish(parser="pymupdf", ocr_pages=ocr.recognised)


def _page_image(pymupdf: Any, page: Any) -> PageImage:
    """The page at its own pixels (an image page is one picture: no re-rendering at another size)."""
    infos = page.get_image_info()
    width = int(infos[0]["width"]) if infos else 0
    zoom = width / page.rect.width if width and page.rect.width else _ASSUMED_DPI / 72
    pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
    dpi = max(1, round(72 * zoom))
    return PageImage(number=int(page.number) + 1, png=pixmap.tobytes("png"), dpi=dpi)
