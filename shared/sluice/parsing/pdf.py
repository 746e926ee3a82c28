"""PDF text, a page at a time, with page offsets kept (SPEC §4, R-PARSE-1, R-PARSE-3)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from sluice.errors import EncryptedDocumentError, ParseError, ScannedPdfError
from sluice.parsing.budget import ParseBudget, TextBudget
from sluice.parsing.document import ParsedDocument
from sluice.parsing.images import ImageCollector, ImageOptions
from sluice.parsing.ocr import OcrPass, full_page_image, needs_ocr, render_page

if TYPE_CHECKING:
    from sluice.parsing.pdf_layout import PageMarkdown

log = logging.getLogger(__name__)

LAYOUT_TIME_SHARE = 0.5
_DAMAGED = "This PDF could not be read: it is damaged or incomplete, and MuPDF's repair of its cross-reference table"


def read_pdf(data: bytes, budget: ParseBudget, images: ImageOptions | None = None, *, ocr: OcrPass | None = None,
             ocr_mode: str | None = None, layout: bool = False) -> ParsedDocument:
    """The text; with ``images`` (image description on, R-PARSE-6) also the images pages show.

    ``ocr_mode`` (a collection's ``ingestion_config.parser.ocr``) with ``ocr`` set recognises the pages
    that need it (sluice.parsing.ocr.needs_ocr), counting in the notes those it could not read.
    ``layout`` (the ``layout`` parser, R-PARSE-7) reads each page as markdown (sluice.parsing.pdf_layout):
    headings, lists and tables kept; the pages, budgets, notes and refusals are the same.
    """
    import pymupdf

    # MuPDF reports every repaired xref on stderr; the document is what matters here.
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    # Plain text without TEXT_PRESERVE_LIGATURES: a typeset "ﬁ" (U+FB01) is read as "fi", so "office"
    # and "Oberfläche" match as a reader wrote them.
    flags = pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_LIGATURES
    # Bytes before the header (a mail gateway's, a broken uploader's) shift every offset; MuPDF reads
    # from the header on (sniff() found it within the first MiB).
    start = data.find(b"%PDF-", 0, 1 << 20)
    if start > 0:
        data = data[start:]
    try:
        # MuPDF rebuilds a damaged cross-reference table by scanning the objects as it opens.
        document = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:
        log.info("pymupdf could not open the PDF: %s", exc)
        raise ParseError(f"{_DAMAGED} could not rebuild it.") from None
    with document:
        if document.needs_pass:
            raise EncryptedDocumentError("This PDF is password-protected. Remove the password and upload it again.")
        if _is_encrypted_wrapper(document):
            raise EncryptedDocumentError(
                "This PDF is a protected wrapper (rights management): its content is an encrypted "
                "attachment that cannot be read without the publisher's reader."
            )
        page_count = document.page_count
        if page_count == 0:
            raise ParseError(f"{_DAMAGED} found no pages.")
        text = TextBudget(budget.max_chars)
        any_text = False
        any_content = False
        collector = ImageCollector(images) if images is not None else None
        if document.is_form_pdf:
            _draw_field_values(document, min(page_count, budget.pdf_max_pages))
        markdown = _page_markdown(document, min(page_count, budget.pdf_max_pages), text) if layout else None
        # The layout parser costs 10-100x plain text a page; past half the parse time limit the rest
        # is read plain, said in a note, so a long document is not lost to the time limit.
        layout_until = time.monotonic() + budget.timeout_seconds * LAYOUT_TIME_SHARE
        for index in range(page_count):
            if index >= budget.pdf_max_pages:
                text.note(f"Stopped after {budget.pdf_max_pages:,} of {page_count:,} pages")
                break
            loaded = None
            if markdown is not None and time.monotonic() > layout_until:
                markdown = None
                last = index + 1 == page_count
                rest = f"Page {page_count:,} was" if last else f"Pages {index + 1:,} to {page_count:,} were"
                text.note(f"{rest} read as plain text: the layout took too long")
            scanned = False
            try:
                page = loaded = document.load_page(index)
                plain = page.get_text("text", flags=flags)
                page_text = plain if markdown is None else markdown.page(document, index)
                ink = not plain.strip() and _has_ink(page)
                any_content = any_content or ink
                if ocr is not None and ocr_mode is not None and needs_ocr(page, plain, ocr_mode, ink):
                    page_text, scanned = _recognised(ocr, page, plain)
            except Exception as exc:
                # One malformed page should not lose the rest of the document.
                log.info("pymupdf failed on page %d: %s", index + 1, exc)
                text.note(f"Page {index + 1} could not be read")
                page_text = ""
                any_content = True
            text.separate("\n\n")
            text.start_page(index + 1)
            page_start = text.length
            going = text.add(page_text.rstrip())
            text.end_page()
            if collector is not None and loaded is not None:
                _collect(collector, document, loaded, index, page_text.rstrip()[: text.length - page_start],
                         page_start, skip_full_page=scanned)
            if page_text.strip():
                any_text = True
            if not going:
                break
        if ocr is not None:
            for sentence in ocr.notes():
                text.note(sentence)
        if not any_text and any_content:
            # A page with content that yields no text is an image of text (or drawn letters).
            # Pages with no content at all are merely empty; the chunk stage calls that sparse.
            pages = f"{page_count} page" if page_count == 1 else f"{page_count:,} pages"
            sentence = f"Scanned PDF — {pages} found but no text could be extracted"
            if ocr is not None and ocr.notes():
                sentence += f" (OCR: {'; '.join(ocr.notes())})"
            raise ScannedPdfError(sentence)
        read_by = {"parser": "layout" if layout else "pymupdf",
                   "ocr_pages": ocr.recognised if ocr is not None else None}
        if collector is None:
            return text.finish(**read_by)
        return text.finish(images=collector.images, placements=collector.placements,
                           images_over_cap=collector.over_cap, images_unreadable=collector.unreadable, **read_by)


def _recognised(ocr: OcrPass, page: object, page_text: str) -> tuple[str, bool]:
    """The page's text as OCR read it, and whether the page is a scan (its full-page image is the
    text, not a figure to describe). A page OCR could not read, or past the limit, keeps its text
    layer; the pass counts it for the note."""
    if not ocr.has_room():
        ocr.skip()
        return page_text, False
    answer = ocr.read([render_page(page, ocr.dpi)])[0]
    if answer is None or answer.text is None:
        return page_text, False
    return answer.text, full_page_image(page)


def pdf_markdown(data: bytes, budget: ParseBudget) -> ParsedDocument:
    """A PDF read by the ``layout`` parser: what ``read_pdf`` returns (page spans, notes,
    refusals), the text markdown."""
    return read_pdf(data, budget, layout=True)


def _page_markdown(document: object, pages: int, text: TextBudget) -> PageMarkdown | None:
    from sluice.parsing.pdf_layout import PageMarkdown

    try:
        return PageMarkdown(document, pages)
    except Exception as exc:
        # The text is still there without its structure: plain text, said in a note.
        log.info("pymupdf4llm could not measure the PDF's fonts: %s", exc)
        text.note("The layout could not be read; the text is plain, without headings")
        return None


# The fields whose value is text a reader typed or chose; a checkbox's value is "Yes" or "Off".
_TEXT_FIELDS = (7, 3, 4)  # PDF_WIDGET_TYPE_TEXT, _COMBOBOX, _LISTBOX (pymupdf's constants)


def _draw_field_values(document: object, pages: int) -> None:
    """A filled form's values as its pages show them. Text extraction reads a field's appearance
    stream (a form XObject), and many form fillers set the value (/V) without redrawing it: the
    value is then in the file but on no page. Each text, combo or list field with a value has its
    appearance drawn anew from the value, so both parsers read what was filled in, where it stands."""
    for index in range(pages):
        try:
            page = document.load_page(index)  # type: ignore[attr-defined]
            for widget in page.widgets(types=_TEXT_FIELDS):
                if widget.field_value and isinstance(widget.field_value, str):
                    widget.update()
        except Exception as exc:
            # A field that cannot be redrawn keeps the appearance it had; the page is still read.
            log.info("pymupdf could not redraw the form fields on page %d: %s", index + 1, exc)


def _has_ink(page: object) -> bool:
    """Whether a page with no text layer shows something: an image, or a path painted in a colour other
    than white (outlined letters, a drawing). A content stream that paints nothing, or only white, is a
    blank page, not a scan."""
    if page.get_images(full=False):  # type: ignore[attr-defined]
        return True
    for drawing in page.get_drawings():  # type: ignore[attr-defined]
        for colour in (drawing.get("fill"), drawing.get("color")):
            if colour is not None and any(channel < 0.95 for channel in colour):
                return True
    return False


def _collect(collector: ImageCollector, document: object, page: object, index: int, page_text: str,
             page_start: int, *, skip_full_page: bool = False) -> None:
    try:
        collector.collect_page(document, page, index + 1, page_text, page_start, skip_full_page=skip_full_page)
    except Exception as exc:
        # An image the reader cannot place is left undescribed; the page's text stands.
        log.info("pymupdf failed on page %d's images: %s", index + 1, exc)


def _is_encrypted_wrapper(document: object) -> bool:
    """PDF 2.0 unencrypted wrapper (Microsoft IRM and others): the real document is an
    attachment whose relationship is EncryptedPayload, and the visible page only says so."""
    try:
        catalog = document.pdf_catalog()  # type: ignore[attr-defined]
        kind, value = document.xref_get_key(catalog, "AF")  # type: ignore[attr-defined]
        if kind not in ("array", "xref"):
            return False
        if kind == "xref":
            value = document.xref_object(int(value.split()[0]))  # type: ignore[attr-defined]
        for ref in value.strip("[] \n").split(" R"):
            parts = ref.split()
            if len(parts) < 2:
                continue
            rel = document.xref_get_key(int(parts[0]), "AFRelationship")  # type: ignore[attr-defined]
            if rel[1] == "/EncryptedPayload":
                return True
    except Exception:
        return False
    return False
