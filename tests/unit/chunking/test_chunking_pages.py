"""Page spans: each chunk names the first and last page its text lies on."""

from __future__ import annotations

import pytest

from sluice.chunking import ChunkingPlan, PageSpan, split_text


def three_pages() -> tuple[str, list[tuple[int, int, int]]]:
    bodies = [
        "Page one opens. " * 6,
        "Page two continues the story. " * 5,
        "Page three ends it. " * 4,
    ]
    text, pages = "", []
    for number, body in enumerate(bodies, start=1):
        if text:
            text += "\n\n"  # the parse stage joins pages with a blank line that belongs to neither
        pages.append((number, len(text), len(text) + len(body)))
        text += body
    return text, pages


def pages_touched(pages, start, end):
    return [number for number, page_start, page_end in pages if page_start < end and start < page_end]


@pytest.mark.parametrize("strategy", ["recursive", "fixed", "markdown"])
def test_every_chunk_spans_exactly_the_pages_its_text_lies_on(strategy):
    text, pages = three_pages()
    chunks = split_text(text, ChunkingPlan(strategy, 120, 30), pages=pages)
    assert len(chunks) >= 3
    for chunk in chunks:
        touched = pages_touched(pages, chunk.char_start, chunk.char_end)
        assert (chunk.page_start, chunk.page_end) == (touched[0], touched[-1])
    assert chunks[0].page_start == 1 and chunks[-1].page_end == 3


def test_a_chunk_that_crosses_a_page_break_spans_both_pages():
    text, pages = three_pages()
    # large enough to take page one and part of page two in one chunk
    chunks = split_text(text, ChunkingPlan("recursive", 150, 0), pages=pages)
    assert (chunks[0].page_start, chunks[0].page_end) == (1, 1)
    crossing = [c for c in chunks if c.page_start != c.page_end]
    assert crossing == [] or all(c.page_end == c.page_start + 1 for c in crossing)
    one_chunk = split_text(text, ChunkingPlan("recursive", 10_000, 0), pages=pages)
    assert [(c.page_start, c.page_end) for c in one_chunk] == [(1, 3)]


def test_a_markdown_heading_on_the_page_before_its_body_counts_for_the_first_chunk():
    text = "# Results\n\n" + "The measured values follow. " * 3
    pages = [PageSpan(4, 0, 9), PageSpan(5, 11, len(text))]
    chunks = split_text(text, ChunkingPlan("markdown", 60, 0), pages=pages)
    assert (chunks[0].page_start, chunks[0].page_end) == (4, 5)
    assert all((c.page_start, c.page_end) == (5, 5) for c in chunks[1:])


def test_pages_may_come_unordered_and_blank_pages_are_skipped():
    text = "alpha on one\n\nbeta on three"
    pages = [(3, 14, 27), (1, 0, 12), (2, 12, 12)]
    chunks = split_text(text, ChunkingPlan("recursive", 12, 0), pages=pages)
    assert [(c.content, c.page_start, c.page_end) for c in chunks] == [
        ("alpha on one", 1, 1),
        ("beta on", 3, 3),
        ("three", 3, 3),
    ]


def test_text_outside_every_page_has_no_page():
    chunks = split_text("cover\n\nbody", ChunkingPlan("recursive", 5, 0), pages=[(1, 7, 11)])
    assert [(c.content, c.page_start) for c in chunks] == [("cover", None), ("body", 1)]


def test_without_pages_there_are_no_page_numbers():
    chunks = split_text("some text", ChunkingPlan("recursive", 100, 0))
    assert (chunks[0].page_start, chunks[0].page_end) == (None, None)


@pytest.mark.parametrize("pages", [[(1, 0, 99)], [(1, 0, 6), (2, 5, 9)], [(1, -1, 3)]])
def test_page_offsets_that_do_not_fit_the_text_are_a_programming_error(pages):
    with pytest.raises(ValueError):
        split_text("some text", ChunkingPlan("recursive", 100, 0), pages=pages)
