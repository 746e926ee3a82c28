"""A PDF's images for description (R-PARSE-6): each one found once, placed where pages show it.

Only when a collection has image description on does the PDF reader call this; off, no image is
ever extracted. On, for each page in order: the page's image placements (``get_image_info``)
are collapsed to one per image object (xref) on that page, placements of images under the
minimum size (icons, rules, bullets) are dropped, and each remaining xref is extracted once per
document. Identical bytes under another xref are the same image (content hash), so it is sent
once; every page that shows it still gets its description. At most ``max_images`` distinct
images are kept; further ones are counted, never extracted. Each kept image is downscaled to the
model's limit (longest side, bytes) before it leaves the child.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any

from sluice.parsing.ocr import FULL_PAGE_SHARE

log = logging.getLogger(__name__)

# A text block starting this far above an image's top still counts as below it (baseline jitter).
_TOLERANCE = 2.0


@dataclass(frozen=True)
class ImageOptions:
    max_images: int
    min_pixels: int
    max_side: int
    max_bytes: int
    min_side: int = 16


@dataclass
class ExtractedImage:
    """One distinct image, ready to send: ``data`` in ``format`` within the model's limits."""

    id: int
    sha256: str
    width: int
    height: int
    format: str
    data: bytes


@dataclass
class ImagePlacement:
    """Where a page shows an image: ``offset`` into the document's text, on page ``page``."""

    page: int
    offset: int
    image: int


@dataclass
class ImageCollector:
    options: ImageOptions
    images: list[ExtractedImage] = field(default_factory=list)
    placements: list[ImagePlacement] = field(default_factory=list)
    over_cap: int = 0
    unreadable: int = 0
    _by_xref: dict[int, int | None] = field(default_factory=dict)
    _by_hash: dict[str, int] = field(default_factory=dict)
    _over_cap_hashes: set[str] = field(default_factory=set)

    def collect_page(self, document: Any, page: Any, page_number: int, page_text: str, page_start: int, *,
                     skip_full_page: bool = False) -> None:
        """Record the page's images; ``page_text`` starts at ``page_start`` in the document's text.

        ``skip_full_page``: the page was OCR'd as a scan, so an image covering (nearly) all of it is the
        page's text, already read, not a figure: it is not described; the page's other images are."""
        seen: set[int] = set()
        found: list[tuple[float, int]] = []
        area = abs(page.rect.width * page.rect.height) or 1.0
        for info in page.get_image_info(xrefs=True):
            xref = int(info.get("xref") or 0)
            if xref <= 0 or xref in seen:
                continue  # an inline image has no object to extract once; a repeated one shows once
            if skip_full_page:
                x0, y0, x1, y1 = info["bbox"]
                if abs((x1 - x0) * (y1 - y0)) / area >= FULL_PAGE_SHARE:
                    continue
            seen.add(xref)
            width, height = int(info.get("width") or 0), int(info.get("height") or 0)
            if width * height < self.options.min_pixels or min(width, height) < self.options.min_side:
                continue
            image = self._image_for(document, xref, width, height)
            if image is not None:
                found.append((float(info["bbox"][1]), image))
        if not found:
            return
        starts = _block_starts(page, page_text)
        for top, image in found:
            local = next((start for y0, start in starts if y0 >= top - _TOLERANCE), len(page_text))
            self.placements.append(ImagePlacement(page=page_number, offset=page_start + local, image=image))

    def _image_for(self, document: Any, xref: int, width: int, height: int) -> int | None:
        if xref in self._by_xref:
            return self._by_xref[xref]
        try:
            # The bytes as stored (no decoding): the same image under another xref hashes the same.
            digest = hashlib.sha256(document.xref_stream_raw(xref) + f"/{width}x{height}".encode()).hexdigest()
        except Exception as exc:
            log.info("image %d could not be read: %s", xref, exc)
            self._unreadable(xref)
            return None
        if digest in self._by_hash:
            self._by_xref[xref] = self._by_hash[digest]
            return self._by_hash[digest]
        if len(self.images) >= self.options.max_images:
            # Counted once per distinct image, never extracted.
            if digest not in self._over_cap_hashes:
                self._over_cap_hashes.add(digest)
                self.over_cap += 1
            self._by_xref[xref] = None
            return None
        try:
            fmt, data, fitted_width, fitted_height = _fitted(document, xref, document.extract_image(xref),
                                                             self.options)
        except Exception as exc:
            log.info("image %d could not be extracted: %s", xref, exc)
            self._unreadable(xref)
            return None
        image = ExtractedImage(id=len(self.images), sha256=digest, width=fitted_width, height=fitted_height,
                               format=fmt, data=data)
        self.images.append(image)
        self._by_xref[xref] = self._by_hash[digest] = image.id
        return image.id

    def _unreadable(self, xref: int) -> None:
        self._by_xref[xref] = None
        self.unreadable += 1


def _block_starts(page: Any, page_text: str) -> list[tuple[float, int]]:
    """Each text block's top and where its text starts in the page's text, in text order."""
    starts: list[tuple[float, int]] = []
    cursor = 0
    for block in page.get_text("blocks"):
        if block[6] != 0:
            continue
        text = str(block[4]).strip()
        if not text:
            continue
        at = page_text.find(text[:40], cursor)
        if at < 0:
            continue
        starts.append((float(block[1]), at))
        cursor = at + 1
    return starts


def _fitted(document: Any, xref: int, raw: dict[str, Any], options: ImageOptions) -> tuple[str, bytes, int, int]:
    """The image as PNG or JPEG within ``max_side`` and ``max_bytes``: as stored when it already is,
    else decoded, downscaled and written as JPEG."""
    import pymupdf as loaded

    pymupdf: Any = loaded  # untyped calls (Pixmap, tobytes) through an Any, as mypy --strict asks
    ext = str(raw.get("ext", "")).lower()
    width, height = int(raw["width"]), int(raw["height"])
    fits = max(width, height) <= options.max_side and len(raw["image"]) <= options.max_bytes
    if ext in ("png", "jpeg", "jpg") and fits:
        return ("png" if ext == "png" else "jpeg"), bytes(raw["image"]), width, height
    pix = pymupdf.Pixmap(document, xref)
    if pix.alpha:
        pix = pymupdf.Pixmap(pix, 0)
    if pix.colorspace is None or pix.colorspace.n != 3:
        pix = pymupdf.Pixmap(pymupdf.csRGB, pix)
    side = options.max_side
    while True:
        scale = min(1.0, side / max(pix.width, pix.height))
        fitted = pix if scale >= 1.0 else pymupdf.Pixmap(pix, max(1, int(pix.width * scale)),
                                                        max(1, int(pix.height * scale)), None)
        # JPEG: an image that needs re-encoding is mostly a large photo or scan, which MuPDF writes as
        # PNG four times slower and eight times larger (2,048 px: 2.0 s and 3.3 MB against 0.5 s and 0.4 MB).
        data = fitted.tobytes("jpg", jpg_quality=85)
        if len(data) <= options.max_bytes or side <= 64:
            return "jpeg", data, fitted.width, fitted.height
        side //= 2
