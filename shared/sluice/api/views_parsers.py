"""GET /rag/parsers (R-PARSE-7): what this deployment can read documents with, so a form offers only
what works — the parsers, the OCR providers available, Tesseract and its language data, Textract."""

from __future__ import annotations

import importlib.util

from pydantic import BaseModel, ConfigDict, Field

from sluice.parsing.ocr import tesseract_languages, tesseract_version
from sluice.parsing.options import DEFAULT_MAX_PAGES, DEFAULT_OCR_LANGUAGES, OCR_MODES, PARSERS


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TesseractOut(_Body):
    available: bool = Field(description="Whether Tesseract can read here: its language data is installed.")
    version: str | None = Field(description="The tesseract program's version on this machine, if there is one.")
    languages: list[str] = Field(description="Installed language data (Tesseract codes), e.g. eng, spa.")


class TextractOut(_Body):
    configured: bool = Field(description="Whether this deployment reads scanned pages through Amazon Textract.")


class ParsersOut(_Body):
    parsers: list[str] = Field(description="What ingestion_config.parser.name may be.")
    ocr_modes: list[str] = Field(description="What ingestion_config.parser.ocr may be.")
    ocr_provider: str = Field(description="The engine OCR runs through in this deployment (SLUICE_OCR_PROVIDER).")
    ocr_providers: list[str] = Field(description="The OCR engines that can run here.")
    ocr_available: bool = Field(description="Whether turning OCR on reads anything in this deployment.")
    ocr_languages: list[str] | None = Field(
        description="What ingestion_config.parser.ocr_languages may combine (with +); null: the engine decides.")
    tesseract: TesseractOut
    textract: TextractOut
    defaults: dict[str, str | int] = Field(description="The settings a collection that names none reads with.")


def parsers_view(ocr_provider: str) -> ParsersOut:
    languages = sorted(tesseract_languages())
    tesseract = TesseractOut(available=bool(languages), version=tesseract_version(), languages=languages)
    textract_built = importlib.util.find_spec("sluice.parsing.textract") is not None
    textract = TextractOut(configured=ocr_provider == "textract" and textract_built)
    providers = [name for name, ok in (("tesseract", tesseract.available), ("textract", textract.configured)) if ok]
    available = tesseract.available if ocr_provider == "tesseract" else textract.configured
    return ParsersOut(
        parsers=list(PARSERS), ocr_modes=list(OCR_MODES), ocr_provider=ocr_provider, ocr_providers=providers,
        ocr_available=available, ocr_languages=languages if ocr_provider == "tesseract" else None,
        tesseract=tesseract, textract=textract,
        defaults={"name": "pymupdf", "ocr": "off", "ocr_languages": DEFAULT_OCR_LANGUAGES,
                  "max_pages": DEFAULT_MAX_PAGES},
    )
