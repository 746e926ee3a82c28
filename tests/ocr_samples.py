"""Scanned pages made from text we know (R-PARSE-7): the text is typeset, rasterised, optionally
noised, and put back as an image with no text layer, so OCR is the only way to read it back."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sluice.parsing.ocr import installed_languages, tessdata_dir

needs_tesseract = pytest.mark.skipif(
    "eng" not in installed_languages(tessdata_dir()),
    reason="no Tesseract English data (apt-get install tesseract-ocr-eng, or make install as root)",
)

PANGRAMS = [
    "The quick brown fox jumps over the lazy dog near the riverbank.",
    "Invoice number 4471 was paid in full on the second of March.",
    "Sphinx of black quartz, judge my vow before the council meets.",
    "Quarterly revenue grew by twelve percent across the northern region.",
    "Please return the signed contract to the legal department by Friday.",
    "Pack my box with five dozen liquor jugs for the annual picnic.",
]


def page_lines(page: int, lines: int = 6) -> list[str]:
    return [PANGRAMS[(page + i) % len(PANGRAMS)] for i in range(lines)]


def _typeset(document: Any, lines: list[str]) -> Any:
    page = document.new_page(width=612, height=792)
    y = 90.0
    for line in lines:
        page.insert_text((72, y), line, fontsize=12)
        y += 22
    return page


def page_png(lines: list[str], dpi: int = 300, noise: float = 0.0, seed: int = 0) -> bytes:
    """One letter-size page of ``lines`` as a greyscale PNG at ``dpi``; ``noise`` flips that share of pixels."""
    import pymupdf

    document = pymupdf.open()
    page = _typeset(document, lines)
    pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    if noise:
        rng = random.Random(seed)
        samples = bytearray(pixmap.samples)
        for _ in range(int(len(samples) * noise)):
            at = rng.randrange(len(samples))
            samples[at] = 255 - samples[at]
        pixmap = pymupdf.Pixmap(pymupdf.csGRAY, pixmap.width, pixmap.height, bytes(samples), False)
        pixmap.set_dpi(dpi, dpi)
    return bytes(pixmap.tobytes("png"))


def scanned_pdf(pages: list[list[str]], dpi: int = 150, noise: float = 0.0) -> bytes:
    """Each page an image of its lines, covering the whole page, with no text layer."""
    import pymupdf

    out = pymupdf.open()
    for number, lines in enumerate(pages):
        png = page_png(lines, dpi=dpi, noise=noise, seed=number)
        page = out.new_page(width=612, height=792)
        page.insert_image(page.rect, stream=png)
    return bytes(out.tobytes())


def born_digital_pdf(pages: list[list[str]]) -> bytes:
    import pymupdf

    out = pymupdf.open()
    for lines in pages:
        _typeset(out, lines)
    return bytes(out.tobytes())


def scanned_tiff(pages: list[list[str]], dpi: int = 150) -> bytes:
    """A multi-page TIFF (as a fax or a scanner writes) of ``pages``."""
    import io

    from PIL import Image

    frames = [Image.open(io.BytesIO(page_png(lines, dpi=dpi))) for lines in pages]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="TIFF", save_all=True, append_images=frames[1:], dpi=(dpi, dpi))
    return buffer.getvalue()


def scanned_jpeg(lines: list[str], dpi: int = 200) -> bytes:
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(page_png(lines, dpi=dpi)))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90, dpi=(dpi, dpi))
    return buffer.getvalue()
