"""A PDF's images for description (R-PARSE-6): found once, placed where pages show them, bounded."""

from __future__ import annotations

from sluice.parsing import ParseBudget, extract, extract_isolated, sniff
from sluice.parsing.images import ImageOptions
from tests.fakes import image_size
from tests.unit.parsing.parsing_samples import CHART_SIZE, DIAGRAM_SIZE, pdf_with_images

BUDGET = ParseBudget(max_chars=100_000, pdf_max_pages=100, sheet_max_cells=1000, archive_max_entries=10,
                     archive_max_bytes=10**6, archive_max_ratio=100, archive_max_member_bytes=10**6,
                     timeout_seconds=60, memory_mb=1536)
ON = ImageOptions(max_images=50, min_pixels=5_000, max_side=1568, max_bytes=3_750_000)


def _read(data: bytes, options: ImageOptions | None):
    return extract(data, sniff(data, "report.pdf"), BUDGET, options)


def _page_of(parsed, offset: int) -> int:
    return next(p.number for p in parsed.pages if p.start <= offset <= p.end)


def test_each_image_once_every_showing_page_placed():
    parsed = _read(pdf_with_images(), ON)

    # Two distinct images: the chart's copy under another xref is the same bytes, so the same image.
    assert sorted((i.width, i.height) for i in parsed.images) == sorted([CHART_SIZE, DIAGRAM_SIZE])
    chart = next(i.id for i in parsed.images if (i.width, i.height) == CHART_SIZE)
    diagram = next(i.id for i in parsed.images if (i.width, i.height) == DIAGRAM_SIZE)
    # One placement a page: the chart shown twice on page 1 is collapsed.
    assert [(p.page, p.image) for p in parsed.placements] == [(1, chart), (2, diagram), (3, diagram), (4, chart)]
    for placement in parsed.placements:
        assert _page_of(parsed, placement.offset) == placement.page
    # The image sits where the page shows it: after the text above it, before the text below.
    first = parsed.placements[0].offset
    assert parsed.text[:first].rstrip().endswith("the revenue overview.")
    assert parsed.text[first:].startswith("Page one closes with the outlook")
    assert parsed.images_over_cap == 0 and parsed.images_unreadable == 0


def test_off_extracts_no_image():
    parsed = _read(pdf_with_images(), None)
    assert parsed.images is None and parsed.placements is None
    # Off and on read the same text: only the images are added.
    assert parsed.text == _read(pdf_with_images(), ON).text


def test_tiny_images_are_skipped():
    parsed = _read(pdf_with_images(icon=True), ON)
    assert len(parsed.images) == 2
    assert [p.page for p in parsed.placements] == [1, 2, 3, 4]


def test_at_most_the_cap_of_distinct_images():
    parsed = _read(pdf_with_images(), ImageOptions(max_images=1, min_pixels=5_000, max_side=1568, max_bytes=10**6))
    assert len(parsed.images) == 1 and parsed.images_over_cap == 1
    # Only pages showing the kept image are placed.
    assert {p.image for p in parsed.placements} == {parsed.images[0].id}


def test_images_are_downscaled_to_the_model_limit():
    parsed = _read(pdf_with_images(), ImageOptions(max_images=50, min_pixels=5_000, max_side=100, max_bytes=10**6))
    sizes = sorted(image_size(i.data) for i in parsed.images)
    assert sizes == [(66, 100), (100, 66)]
    assert sorted((i.width, i.height) for i in parsed.images) == sizes


def test_the_isolated_child_hands_the_images_back():
    data = pdf_with_images()
    parsed = extract_isolated(data, sniff(data, "report.pdf"), BUDGET, ON)
    assert sorted(image_size(i.data) for i in parsed.images) == sorted([CHART_SIZE, DIAGRAM_SIZE])
    assert [p.page for p in parsed.placements] == [1, 2, 3, 4]
