"""The ``layout`` parser (R-PARSE-7): a PDF's headings, lists and tables as markdown, on a PDF built here."""

from __future__ import annotations

import pytest
from parsing_samples import budget, pdf_bytes, pdf_with_ligatures, pdf_with_structure

from sluice.chunking import ChunkingPlan, split_text
from sluice.parsing import extract, sniff
from sluice.parsing.isolation import extract_isolated
from sluice.parsing.options import ParserOptions
from sluice.parsing.pdf import pdf_markdown


def test_headings_lists_and_tables_come_out_as_markdown() -> None:
    text = pdf_markdown(pdf_with_structure(), budget()).text
    lines = text.splitlines()
    assert "# Installation Guide" in lines
    assert "## Requirements" in lines
    assert "## Configuration" in lines
    assert "## Troubleshooting" in lines
    assert "- PostgreSQL 16 with pgvector" in lines
    assert "|chunk_size|2500|characters|" in lines
    assert "|---|---|---|" in lines


def test_the_markdown_strategy_splits_a_layout_pdf_at_its_headings_with_its_pages() -> None:
    document = pdf_markdown(pdf_with_structure(), budget())
    pages = [(page.number, page.start, page.end) for page in document.pages]  # as the parse artifact keeps them
    chunks = split_text(document.text, ChunkingPlan("markdown", 2500, 0), pages=pages)
    assert [chunk.content.splitlines()[0] for chunk in chunks] == [
        "# Installation Guide",
        "## Requirements",
        "## Configuration",
        "## Troubleshooting",
    ]
    assert [(chunk.page_start, chunk.page_end) for chunk in chunks] == [(1, 1), (1, 1), (1, 1), (2, 2)]
    assert "- Two gigabytes of memory" in chunks[1].content
    assert "read its log first" in chunks[3].content


def test_page_spans_cover_each_pages_markdown() -> None:
    document = pdf_markdown(pdf_with_structure(), budget())
    assert [page.number for page in document.pages] == [1, 2]
    assert document.parser == "layout"
    first = document.text[document.pages[0].start : document.pages[0].end]
    second = document.text[document.pages[1].start : document.pages[1].end]
    assert first.startswith("# Installation Guide") and first.rstrip().endswith("|overlap|200|shared|")
    assert second == "## Troubleshooting\n\nIf the service does not start, read its log first."


def test_the_default_parser_is_still_plain_text() -> None:
    data = pdf_with_structure()
    text = extract(data, sniff(data, "guide.pdf"), budget()).text
    assert "#" not in text and "|" not in text
    assert text.splitlines()[:2] == [
        "Installation Guide",
        "This paragraph explains how the product is installed, sentence 0 of the body.",
    ]


def test_max_pages_stops_the_layout_parser_with_a_note() -> None:
    document = pdf_markdown(pdf_bytes(["first page", "second page", "third page"]), budget(pdf_max_pages=2))
    assert [page.number for page in document.pages] == [1, 2]
    assert "third page" not in document.text
    assert document.notes == ["Stopped after 2 of 3 pages"]


def test_ligatures_are_read_as_letters_by_the_layout_parser_too() -> None:
    text = pdf_markdown(pdf_with_ligatures("o\ufb03ce \ufb01le"), budget()).text
    assert "office file" in text and "\ufb01" not in text


def test_the_parse_child_runs_the_layout_parser() -> None:
    data = pdf_with_structure()
    document = extract_isolated(data, sniff(data, "guide.pdf"), budget(), parser=ParserOptions(name="layout"))
    assert "## Troubleshooting" in document.text.splitlines()
    assert [page.number for page in document.pages] == [1, 2]


def test_past_its_share_of_the_time_limit_the_layout_parser_reads_the_rest_as_plain_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sluice.parsing.pdf as pdf

    monkeypatch.setattr(pdf, "LAYOUT_TIME_SHARE", 0.0)  # the first page already past it
    document = pdf_markdown(pdf_with_structure(), budget())
    assert "Installation Guide" in document.text and "# Installation Guide" not in document.text
    assert "Troubleshooting" in document.text
    assert document.notes == ["Pages 1 to 2 were read as plain text: the layout took too long"]
