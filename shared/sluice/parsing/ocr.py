"""OCR: page images in, recognised text out, through one engine per deployment (SPEC R-PARSE-7).

The seam every engine plugs into (sluice.parsing.ocr_engine): ``PageImage`` (a page rendered to PNG
at a known resolution), ``Recognised`` (its text, or why there is none) and ``OcrEngine`` (``languages`` installed, and
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
from dataclasses import replace
from functools import lru_cache
from typing import Any

from sluice.errors import OcrConfigurationError
from sluice.parsing.ocr_engine import OcrEngine, PageImage, Recognised
from sluice.parsing.options import ParserOptions

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


def split_languages(languages: str) -> list[str]:
    """``eng+spa`` as its codes; ValueError naming what is not a code."""
    codes = [code.strip() for code in languages.split("+")]
    bad = [code for code in codes if not _LANGUAGE.match(code)]
    if not codes or bad:
        raise ValueError(f"{languages!r} is not a list of Tesseract language codes such as eng or eng+spa")
    return codes


def tessdata_dir() -> str | None:
    """The folder holding Tesseract's language data: TESSDATA_PREFIX, else the usual places."""
    from sluice.config import AssetSettings, read

    prefix = read(AssetSettings).tessdata_prefix
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


def tesseract_languages() -> frozenset[str]:
    """The languages the deployment's Tesseract reads. On AWS only the parse function carries the
    Tesseract layer, so the deployment declares what that layer holds (``ocr_languages``,
    SLUICE_OCR_LANGUAGES) to the functions that validate a collection's parser
    and answer GET /rag/parsers; where it declares nothing (no layer, the local runtime, sam local),
    the machine's installed language data is what it reads."""
    from sluice.config import OcrSettings, current

    declared = current(OcrSettings).ocr_languages
    if declared:
        return frozenset(code for code in re.split(r"[\s,+]+", declared) if code)
    return installed_languages(tessdata_dir())


def available_languages() -> frozenset[str] | None:
    """What the deployment's engine reads: Tesseract's languages, or None (the engine decides, as
    Textract does). Checked where a collection's ``ocr_languages`` is validated."""
    from sluice.config import OcrSettings, current

    if current(OcrSettings).ocr_provider == "textract":
        return None
    return tesseract_languages()


def force_allowed() -> bool:
    """Whether a collection or an upload may ask for ``ocr: force`` (OCR_FORCE_ALLOWED, issue 37);
    checked where a parser config is validated."""
    from sluice.config import OcrSettings, current

    return current(OcrSettings).ocr_force_allowed


def engine_for(provider: str | None = None, **options: Any) -> OcrEngine:
    """The deployment's OCR engine: ``provider``, else the ``ocr_provider`` setting."""
    if provider is None:
        from sluice.config import OcrSettings, current

        provider = current(OcrSettings).ocr_provider
    if provider == "tesseract":
        return TesseractEngine()
    if provider == "textract":
        from sluice.parsing import textract  # boto3 and botocore, only where Textract is chosen

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


# A page with fewer visible characters than this in its text layer is "nearly empty": a page
# number, a stamp, a scanner's footer.
NEARLY_EMPTY_CHARS = 20
# One image covering this share of the page is a scan of it.
FULL_PAGE_SHARE = 0.85
# A full-page image under this much text is a scan with a stamp or a header laid over it; more
# text than this is a born-digital page with a background, and keeps its text.
SCAN_OVERLAY_CHARS = 200

OCR_OFF_HINT = "OCR can be turned on for the collection (ingestion_config.parser.ocr: auto) to read it."


def full_page_image(page: Any) -> bool:
    """Whether one image covers (nearly) the whole page, as a scanner's output does."""
    area = abs(page.rect.width * page.rect.height) or 1.0
    for info in page.get_image_info():
        x0, y0, x1, y1 = info["bbox"]
        if abs((x1 - x0) * (y1 - y0)) / area >= FULL_PAGE_SHARE:
            return True
    return False


def needs_ocr(page: Any, page_text: str, mode: str, has_ink: bool) -> bool:
    """``auto``: a page whose text layer is empty or nearly so (and shows something), or is one
    full-page image under little text; ``force``: every page; ``off``: none."""
    if mode == "force":
        return True
    if mode != "auto":
        return False
    visible = len("".join(page_text.split()))
    if visible < NEARLY_EMPTY_CHARS:
        return has_ink
    return visible < SCAN_OVERLAY_CHARS and full_page_image(page)


class OcrPass:
    """One document's OCR: which pages were recognised, which could not be, which the limit left out.

    ``read`` is called per page that needs OCR, in order; the notes say what happened, so a page is
    never silently empty (R-PARSE-7)."""

    def __init__(self, engine: OcrEngine, languages: str, max_pages: int, dpi: int = DEFAULT_DPI, *,
                 limit_note: str | None = None) -> None:
        self.engine = engine
        self.limit_note = limit_note
        self.languages = languages
        self.max_pages = max_pages
        self.dpi = dpi
        self.recognised = 0
        self.failed: list[tuple[int, str]] = []
        self.left_out = 0

    def read(self, images: Sequence[PageImage]) -> list[Recognised | None]:
        """Recognise ``images``; None for a page past ``max_pages`` (counted, not read)."""
        room = max(0, self.max_pages - self.recognised - len(self.failed))
        taken, rest = list(images[:room]), images[room:]
        self.left_out += len(rest)
        answers: list[Recognised | None] = []
        if taken:
            for answer in self.engine.recognise(taken, self.languages):
                if answer.text is None:
                    self.failed.append((answer.number, answer.error or "no reason given"))
                else:
                    self.recognised += 1
                answers.append(answer)
        return answers + [None] * len(rest)

    def has_room(self) -> bool:
        return self.recognised + len(self.failed) < self.max_pages

    def skip(self) -> None:
        self.left_out += 1

    def notes(self) -> list[str]:
        out: list[str] = []
        if self.failed:
            pages = ", ".join(str(number) for number, _ in self.failed[:20])
            more = f" and {len(self.failed) - 20:,} more" if len(self.failed) > 20 else ""
            reasons = sorted({reason for _, reason in self.failed})
            out.append(
                f"OCR could not read {_pages(len(self.failed))} ({pages}{more}): {'; '.join(reasons)}; "
                "their text is missing"
            )
        if self.left_out and self.limit_note is not None:
            left = f"{_pages(self.left_out)} that needed it {'was' if self.left_out == 1 else 'were'} not recognised"
            out.append(self.limit_note.format(pages=left))
        elif self.left_out:
            out.append(
                f"OCR stopped at the {self.max_pages:,}-page limit (ingestion_config.parser.max_pages): "
                f"{_pages(self.left_out)} that needed it {'was' if self.left_out == 1 else 'were'} not recognised"
            )
        return out


def _pages(count: int) -> str:
    return f"{count:,} page" if count == 1 else f"{count:,} pages"


# --- OCR spend (issue 37): the operator's limits over what a writer asks for ----------------------

FORCE_OFF = ("OCR force is turned off by this deployment's operator (OCR_FORCE_ALLOWED): pages were read as with "
             "ocr: auto")


def budget_spent(per_day: int) -> str:
    """The note for a tenant whose daily OCR pages are spent, with ``{pages}`` for what was left out."""
    return (f"OCR stopped at this account's budget of {_pages(per_day)} a day (OCR_PAGES_PER_TENANT_PER_DAY), "
            "spent until midnight UTC: {pages}; retry the document then")


def plan_ocr(parser: ParserOptions, *, force_allowed: bool, max_pages_per_document: int,
             pages_left_today: int | None, pages_per_day: int) -> tuple[ParserOptions, list[str]]:
    """What OCR a document gets: the writer's ``parser`` within the operator's limits. ``force`` is read
    as ``auto`` where it is disallowed (a note says so); the pages are the least of the writer's
    ``max_pages``, the operator's per-document ceiling and what is left of the tenant's day (None: no
    budget), and a note names whichever stopped it. Off: nothing changes."""
    if not parser.ocr_on:
        return parser, []
    notes: list[str] = []
    if parser.ocr == "force" and not force_allowed:
        parser = replace(parser, ocr="auto")
        notes.append(FORCE_OFF)
    limit, note = parser.max_pages, None
    if max_pages_per_document < limit:
        limit = max_pages_per_document
        note = (f"OCR stopped at this deployment's limit of {_pages(limit)} a document (OCR_MAX_PAGES_PER_DOCUMENT): "
                "{pages}")
    if pages_left_today is not None and pages_left_today < limit:
        limit = max(0, pages_left_today)
        note = budget_spent(pages_per_day)
    return replace(parser, max_pages=limit, ocr_limit_note=note), notes


class PrecomputedEngine:
    """Answers the parent already got from an engine that cannot run in the parse child (Textract
    needs credentials the child never sees): the child reads the same pages, the text comes from here."""

    def __init__(self, name: str, answers: dict[int, Recognised]) -> None:
        self.name = name
        self._answers = answers

    def languages(self) -> frozenset[str] | None:
        return None

    def recognise(self, pages: Sequence[PageImage], languages: str) -> list[Recognised]:
        missing = Recognised(number=0, text=None, error="the page was not recognised")
        return [self._answers.get(p.number, Recognised(p.number, missing.text, missing.error)) for p in pages]


class RecordingEngine:
    """The first pass of an out-of-child engine: keeps the page images the reader asks about."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pages: list[PageImage] = []

    def languages(self) -> frozenset[str] | None:
        return None

    def recognise(self, pages: Sequence[PageImage], languages: str) -> list[Recognised]:
        self.pages.extend(pages)
        return [Recognised(number=p.number, text="", error=None) for p in pages]
