"""OCR: page images in, recognised text out, through one engine per deployment (SPEC R-PARSE-7).

The seam every engine plugs into: ``PageImage`` (a page rendered to PNG at a known resolution),
``Recognised`` (its text, or why there is none) and ``OcrEngine`` (``languages`` installed, and
``recognise``). ``engine_for`` picks the engine from the deployment setting ``ocr_provider``
(``SLUICE_OCR_PROVIDER``): ``tesseract`` (default; runs in the parse child, sluice.parsing.isolation)
or ``textract`` (sluice.parsing.textract, imported only when chosen).

Tesseract is reached through PyMuPDF's own OCR (``Pixmap.pdfocr_tobytes``): the PyMuPDF wheel
already carries the Tesseract engine, so the only thing a machine or a Lambda layer has to supply is
the language data (``*.traineddata``, found through ``TESSDATA_PREFIX`` or the Debian locations).
No second binding, no subprocess per page, and the recognition runs inside the parse child's limits.
"""

from __future__ import annotations

import glob
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from sluice.errors import OcrConfigurationError

log = logging.getLogger(__name__)

DEFAULT_DPI = 300
PROVIDERS = ("tesseract", "textract")
# Where Debian (tesseract-ocr-*), a Lambda layer (/opt) and Homebrew keep the language data.
_TESSDATA_GLOBS = (
    "/usr/share/tesseract-ocr/*/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
    "/opt/tessdata",
    "/opt/share/tessdata",
    "/opt/homebrew/share/tessdata",
)
# One Tesseract language code (eng, chi_sim, deu_latf), joined by "+" for several.
_LANGUAGE = re.compile(r"^[a-z][a-z0-9_]{1,30}$")
# Not languages: orientation/script detection and the equation model.
_NOT_LANGUAGES = frozenset({"osd", "equ"})


@dataclass(frozen=True)
class PageImage:
    number: int  # 1-based page number
    png: bytes
    dpi: int


@dataclass(frozen=True)
class Recognised:
    number: int
    # None when the page could not be read; ``error`` then says why (counted in the document's note).
    text: str | None
    error: str | None


class OcrEngine(Protocol):
    name: str  # "tesseract" | "textract"

    def languages(self) -> frozenset[str] | None:
        """The language codes this engine can read; None when the engine decides (Textract)."""
        ...

    def recognise(self, pages: Sequence[PageImage], languages: str) -> list[Recognised]:
        """One ``Recognised`` per page, in order; a page it could not read has text None."""
        ...


def split_languages(languages: str) -> list[str]:
    """``eng+spa`` as its codes; ValueError naming what is not a code."""
    codes = [code.strip() for code in languages.split("+")]
    bad = [code for code in codes if not _LANGUAGE.match(code)]
    if not codes or bad:
        raise ValueError(f"{languages!r} is not a list of Tesseract language codes such as eng or eng+spa")
    return codes


def tessdata_dir() -> str | None:
    """The folder holding Tesseract's language data: TESSDATA_PREFIX, else the usual places."""
    prefix = os.environ.get("TESSDATA_PREFIX")
    candidates = [prefix, os.path.join(prefix, "tessdata")] if prefix else []
    for pattern in _TESSDATA_GLOBS:
        candidates.extend(sorted(glob.glob(pattern), reverse=True))  # the newest version first
    for candidate in candidates:
        if candidate and glob.glob(os.path.join(candidate, "*.traineddata")):
            return candidate
    return None


def installed_languages(folder: str | None) -> frozenset[str]:
    if folder is None:
        return frozenset()
    names = (
        os.path.basename(path)[: -len(".traineddata")] for path in glob.glob(os.path.join(folder, "*.traineddata"))
    )
    return frozenset(name for name in names if name not in _NOT_LANGUAGES)


@lru_cache(maxsize=1)
def tesseract_version() -> str | None:
    """The version of the ``tesseract`` program on PATH, if there is one (what ``GET /rag/parsers``
    reports; recognition itself uses the engine inside PyMuPDF and needs only the language data)."""
    found = shutil.which("tesseract")
    if found is None:
        return None
    try:
        out = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    first = (out.stdout or out.stderr).strip().splitlines()
    match = re.search(r"(\d+\.\d+(?:\.\d+)?)", first[0]) if first else None
    return match.group(1) if match else None


class TesseractEngine:
    """Tesseract inside PyMuPDF: each page image becomes a one-page PDF whose text layer is read back."""

    name = "tesseract"

    def __init__(self, tessdata: str | None = None) -> None:
        self.tessdata = tessdata if tessdata is not None else tessdata_dir()

    def languages(self) -> frozenset[str] | None:
        return installed_languages(self.tessdata)

    def recognise(self, pages: Sequence[PageImage], languages: str) -> list[Recognised]:
        if self.tessdata is None:
            sentence = "no Tesseract language data is installed"
            return [Recognised(number=page.number, text=None, error=sentence) for page in pages]
        missing = [code for code in split_languages(languages) if code not in (self.languages() or frozenset())]
        if missing:
            sentence = f"no Tesseract language data for {', '.join(missing)}"
            return [Recognised(number=page.number, text=None, error=sentence) for page in pages]
        return [self._one(page, languages) for page in pages]

    def _one(self, page: PageImage, languages: str) -> Recognised:
        import pymupdf as loaded

        pymupdf: Any = loaded
        try:
            pixmap = pymupdf.Pixmap(page.png)
            if pixmap.alpha:
                pixmap = pymupdf.Pixmap(pixmap, 0)
            if pixmap.colorspace is None or pixmap.colorspace.n != 3:
                # MuPDF's Tesseract bridge reads RGB only: a greyscale pixmap comes back with no text.
                pixmap = pymupdf.Pixmap(pymupdf.csRGB, pixmap)
            pixmap.set_dpi(page.dpi, page.dpi)
            ocred = pixmap.pdfocr_tobytes(compress=False, language=languages, tessdata=self.tessdata)
            with pymupdf.open(stream=ocred, filetype="pdf") as document:
                text = "".join(p.get_text("text") for p in document)
        except MemoryError:
            raise
        except Exception as exc:
            log.info("tesseract failed on page %d: %s", page.number, exc)
            return Recognised(number=page.number, text=None, error="the OCR engine could not read it")
        return Recognised(number=page.number, text=text, error=None)


def engine_for(provider: str | None = None, **options: Any) -> OcrEngine:
    """The deployment's OCR engine: ``provider``, else the ``ocr_provider`` setting."""
    if provider is None:
        from sluice.config import get_settings

        provider = get_settings().ocr_provider
    if provider == "tesseract":
        return TesseractEngine()
    if provider == "textract":
        try:
            from sluice.parsing import textract  # type: ignore[attr-defined,unused-ignore]
        except ImportError:
            raise OcrConfigurationError(
                "SLUICE_OCR_PROVIDER is textract, but this build has no Textract engine (sluice.parsing.textract)."
            ) from None
        engine: OcrEngine = textract.textract_engine(**options)
        return engine
    raise OcrConfigurationError(f"SLUICE_OCR_PROVIDER must be one of {', '.join(PROVIDERS)}, not {provider!r}.")


def render_page(page: Any, dpi: int = DEFAULT_DPI) -> PageImage:
    """A PDF (or image document) page as a greyscale PNG at ``dpi``: what every engine reads."""
    import pymupdf as loaded

    pymupdf: Any = loaded
    zoom = dpi / 72
    pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, alpha=False)
    return PageImage(number=int(page.number) + 1, png=pixmap.tobytes("png"), dpi=dpi)
