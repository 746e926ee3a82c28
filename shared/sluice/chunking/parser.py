"""``ingestion_config.parser``: the parser settings a collection stores and an upload overrides (R-PARSE-7).

Validated like the chunking settings (sluice.chunking.config): the same refusals, each field
named ``ingestion_config.parser.<field>``. A language is checked against what this deployment
can read (sluice.parsing.ocr): a language with no data installed reads nothing, so it is refused.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from sluice.parsing.ocr import available_languages, force_allowed, split_languages
from sluice.parsing.options import DEFAULT_MAX_PAGES, DEFAULT_OCR_LANGUAGES, ParserOptions

PARSER_RULE = "sluice_rule"

CHECK_INSTALLED = "check_installed"
MAX_PAGES_CEILING = 10_000
PARSER_SETTINGS = ("name", "ocr", "ocr_languages", "output", "max_pages")
PARSER_LABELS = {
    "name": "Parser",
    "ocr": "OCR",
    "ocr_languages": "OCR languages",
    "output": "Parser output",
    "max_pages": "Maximum pages",
}


class _ParserFields(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Literal["pymupdf", "layout"] | None = None
    ocr: Literal["off", "auto", "force"] | None = None
    ocr_languages: str | None = None
    output: Literal["text", "markdown"] | None = None
    max_pages: int | None = None

    @field_validator("max_pages", mode="before")
    @classmethod
    def _no_booleans(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise PydanticCustomError("int_type", "not a number")
        return value

    @field_validator("max_pages")
    @classmethod
    def _pages_in_range(cls, value: int | None) -> int | None:
        if value is not None and not 1 <= value <= MAX_PAGES_CEILING:
            raise PydanticCustomError(
                PARSER_RULE, "Maximum pages must be between 1 and {ceiling}.", {"ceiling": f"{MAX_PAGES_CEILING:,}"}
            )
        return value

    @field_validator("ocr")
    @classmethod
    def _force_allowed(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Checked when a config is sent; a stored ``force`` is read as ``auto`` with a note (issue 37).
        if value == "force" and (info.context or {}).get(CHECK_INSTALLED) and not force_allowed():
            raise PydanticCustomError(
                PARSER_RULE, "OCR force is turned off by this deployment's operator (OCR_FORCE_ALLOWED); use auto, "
                "which reads the pages that need it.")
        return value

    @field_validator("ocr_languages")
    @classmethod
    def _languages_installed(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        try:
            codes = split_languages(value)
        except ValueError:
            raise PydanticCustomError(
                PARSER_RULE,
                "OCR languages must be Tesseract language codes joined by +, such as eng or eng+spa.",
            ) from None
        # Checked against the machine when a config is sent (CHECK_INSTALLED), not when a stored one
        # is read back: language data removed since then fails that document's pages with a note.
        if not (info.context or {}).get(CHECK_INSTALLED):
            return "+".join(codes)
        installed = available_languages()
        missing = [code for code in codes if installed is not None and code not in installed]
        if missing:
            have = ", ".join(sorted(installed or ())) or "none"
            raise PydanticCustomError(
                PARSER_RULE,
                "No OCR language data is installed for {missing} (installed: {have}); GET /rag/parsers lists "
                "what this deployment reads.",
                {"missing": ", ".join(missing), "have": have},
            )
        return "+".join(codes)


class ParserSettings(_ParserFields):
    """The stored ``ingestion_config.parser``; a field left out keeps its default."""

    def options(self) -> ParserOptions:
        return ParserOptions(
            name=self.name or "pymupdf",
            ocr=self.ocr or "off",
            ocr_languages=self.ocr_languages or DEFAULT_OCR_LANGUAGES,
            output=self.output,
            max_pages=self.max_pages or DEFAULT_MAX_PAGES,
        )


class ParserOverride(_ParserFields):
    """A per-upload ``parser`` override: only the fields it changes."""
