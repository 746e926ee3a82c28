"""The ``layout`` parser (R-PARSE-7): a PDF's headings, lists and tables as markdown.

pymupdf4llm 0.3 on PyMuPDF's own text output, in its font-size mode: the most frequent size
(by characters, over the pages read) is body text, each larger size a heading level, the largest
``#``. Lines that start with a bullet become list items; ruled tables become pipe tables. So the
``markdown`` chunking strategy (sluice.chunking.markdown) finds sections in a PDF. Pages are
read one at a time by ``read_pdf``, which keeps page spans, budgets and notes as for plain text.

Not 1.27+: those need pymupdf_layout (onnxruntime, numpy, models: ~150 MB, past the parse
layer's room) and pin one exact PyMuPDF.
"""

from __future__ import annotations

import re
from typing import Any

# Typeset ligatures (U+FB00-U+FB06): pymupdf4llm keeps them; plain text reads them as letters
# (pdf.py), so the two parsers index the same words.
_LIGATURES = str.maketrans(
    {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"}
)
_BOLD_HEADING = re.compile(r"^(#{1,6} )\*\*(.+?)\*\*[ \t]*$", re.MULTILINE)
_BLANK_RUN = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


class PageMarkdown:
    """Markdown of one page at a time, with heading sizes learnt from the pages to be read."""

    def __init__(self, document: Any, page_count: int) -> None:
        import pymupdf

        # pymupdf4llm prints a recommendation on import; the parse child's stdout is its answer.
        pymupdf.no_recommend_layout()
        import pymupdf4llm

        self._markdown = pymupdf4llm.to_markdown
        if document.is_form_pdf:
            # pymupdf4llm bakes a form's widgets into the page contents on every call: once, here,
            # before read_pdf holds a page that baking would change under it.
            document.bake()
        # body_limit 0: the body is the most frequent size, whatever it is (the library's default
        # of 12 pt takes 12 pt headings over a 10 pt body, the usual paper, for body text).
        self._headers = pymupdf4llm.IdentifyHeaders(document, pages=range(page_count), body_limit=0)

    def page(self, document: Any, index: int) -> str:
        # Table detection ("lines_strict": ruled tables) costs most of a page's time, converting every
        # character, and finds nothing on a page that draws no path: such a page skips it.
        drawn = any("path" in kind for kind, _box in document.load_page(index).get_bboxlog())
        chunks = self._markdown(
            document,
            pages=[index],
            hdr_info=self._headers,
            page_chunks=True,
            ignore_images=True,
            show_progress=False,
            table_strategy="lines_strict" if drawn else None,
        )
        return tidy(chunks[0]["text"] if chunks else "")


def tidy(markdown: str) -> str:
    """Ligatures as letters, ``# **Title**`` as ``# Title``, runs of blank lines as one."""
    markdown = markdown.translate(_LIGATURES)
    markdown = _BOLD_HEADING.sub(r"\1\2", markdown)
    return _BLANK_RUN.sub("\n\n", markdown).strip()
