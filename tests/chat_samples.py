"""Documents for the chat tests, generated so the suite runs on a bare clone: a long report with a
sentence planted on one page, and multi-page TIFFs."""

from __future__ import annotations

import io
import random

from tests.unit.parsing.parsing_samples import pdf_bytes

PLANTED = ("The penalty clause for late delivery of the turbine housings is four thousand two hundred euros "
           "for each day of delay.")
PINPOINT_QUESTION = "What is the penalty for late delivery of the turbine housings?"

_SUBJECTS = ["The harbour authority", "The regional council", "Our maintenance crew", "The survey team",
             "The finance office", "A visiting engineer", "The port captain", "The dredging contractor",
             "The audit committee", "The safety officer", "The ferry operator", "The customs service"]
_VERBS = ["reviewed", "inspected", "approved", "postponed", "measured", "documented", "questioned",
          "repaired", "estimated", "recorded", "compared", "scheduled"]
_OBJECTS = ["the eastern breakwater", "the tidal gauges", "the winter dredging budget", "the crane rails",
            "the fuel storage tanks", "the mooring bollards", "the navigation buoys", "the quay lighting",
            "the sediment samples", "the passenger terminal roof", "the pilot boat engines", "the storm drains"]
_TAILS = ["after the spring tides", "before the annual review", "with the help of local divers",
          "despite heavy rain", "ahead of the summer season", "at the request of the ministry",
          "for the third time this year", "using the new sonar equipment"]


def report_pages(pages: int = 40, *, planted_page: int = 23, planted: str = PLANTED,
                 sentences_per_page: int = 14, seed: int = 7) -> list[str]:
    """``pages`` pages of distinct prose; ``planted`` is one sentence of page ``planted_page`` (1-based)."""
    rng = random.Random(seed)
    out = []
    for number in range(1, pages + 1):
        lines = [f"Section {number}: operations report, part {number}."]
        for _ in range(sentences_per_page):
            lines.append(f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} "
                         f"{rng.choice(_TAILS)}, noting item {rng.randint(100, 999)}.")
        if number == planted_page:
            lines.insert(len(lines) // 2, planted)
        out.append("\n".join(lines))
    return out


def report_pdf(pages: int = 40, **kwargs: object) -> bytes:
    return pdf_bytes(report_pages(pages, **kwargs))  # type: ignore[arg-type]


def tiff_bytes(pages: int, size: tuple[int, int] = (300, 200)) -> bytes:
    """A multi-page TIFF (each page a different shade, so pages differ)."""
    from PIL import Image

    images = [Image.new("RGB", size, (20 * i % 255, 120, 90)) for i in range(pages)]
    buffer = io.BytesIO()
    images[0].save(buffer, format="TIFF", save_all=True, append_images=images[1:])
    return buffer.getvalue()
