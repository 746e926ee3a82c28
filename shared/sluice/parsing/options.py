"""How a collection (or one upload) asks its documents to be read (SPEC R-PARSE-7).

``ParserOptions`` is the resolved ``ingestion_config.parser``: validated by sluice.chunking.config,
carried to the parse child in its header, read there by the PDF and image readers.
"""

from __future__ import annotations

from dataclasses import dataclass

PARSERS = ("pymupdf", "layout")
OCR_MODES = ("off", "auto", "force")
OUTPUTS = ("text", "markdown")
DEFAULT_OCR_LANGUAGES = "eng"
DEFAULT_MAX_PAGES = 1000


@dataclass(frozen=True)
class ParserOptions:
    name: str = "pymupdf"
    ocr: str = "off"
    ocr_languages: str = DEFAULT_OCR_LANGUAGES
    # None: the parser's own (pymupdf plain text, layout markdown).
    output: str | None = None
    max_pages: int = DEFAULT_MAX_PAGES
    dpi: int = 300
    # Why OCR stops at ``max_pages`` when it is the operator's limit, not the writer's (sluice.parsing.ocr
    # ``plan_ocr``): the note's words, with ``{pages}`` for what was left out. None: the writer's limit.
    ocr_limit_note: str | None = None

    @property
    def ocr_on(self) -> bool:
        return self.ocr != "off"


DEFAULT_OPTIONS = ParserOptions()
