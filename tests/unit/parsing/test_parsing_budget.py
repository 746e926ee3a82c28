"""The cap is a budget the readers spend (R-PARSE-1), NULs go (R-PARSE-2), and the sentences
of R-PARSE-3 and the preview of R-PARSE-4."""

from __future__ import annotations

import io
import re
import time
import zipfile

import pytest
from parsing_samples import (
    budget,
    image_only_pdf,
    pdf_bytes,
    pdf_with_blank_content,
    pdf_with_ligatures,
    pdf_with_vector_letters,
    replace_zip_member,
    xlsx_bytes,
)

from sluice.errors import ScannedPdfError
from sluice.parsing import ParsedDocument, extract, sniff, too_sparse
from sluice.parsing.budget import TextBudget, truncation_marker


def read(data: bytes, name: str, **limits: int) -> ParsedDocument:
    return extract(data, sniff(data, name), budget(**limits))


# --- the character budget ----------------------------------------------------------------------


def test_text_past_the_cap_ends_with_the_marker() -> None:
    document = read(("word " * 1000).encode(), "long.txt", max_chars=100)
    assert document.truncated
    assert document.text.endswith("\n\n[… the rest of the document is left out: it exceeds the 100-character limit]")
    assert len(document.text) == 100 + len(truncation_marker(100))


def test_the_default_marker_names_the_five_million_limit() -> None:
    assert truncation_marker(5_000_000) == (
        "\n\n[… the rest of the document is left out: it exceeds the 5,000,000-character limit]"
    )


def test_text_within_the_cap_is_whole_and_unmarked() -> None:
    document = read(b"short and sweet", "short.txt", max_chars=100)
    assert not document.truncated and document.text == "short and sweet"


def test_a_pdf_stops_at_the_page_that_crosses_the_cap_and_keeps_page_offsets() -> None:
    pages = [f"page {n} " + "lorem ipsum " * 80 for n in range(1, 11)]
    document = read(pdf_bytes(pages), "book.pdf", max_chars=2500)
    assert document.truncated
    assert [page.number for page in document.pages] == [1, 2, 3]
    for page in document.pages:
        assert page.start <= page.end <= 2500
    first = document.pages[0]
    assert document.text[first.start : first.end].startswith("page 1 lorem")
    assert document.text[document.pages[1].start :].startswith("page 2 lorem")


def test_a_pdf_stops_after_the_page_limit_with_a_note() -> None:
    document = read(pdf_bytes([f"page {n}" for n in range(1, 6)]), "pages.pdf", pdf_max_pages=2)
    assert [page.number for page in document.pages] == [1, 2]
    assert "page 3" not in document.text
    assert document.notes == ["Stopped after 2 of 5 pages"]


def test_rows_stop_at_the_row_that_crosses_the_cap() -> None:
    rows = [[f"row{i}", "x" * 40] for i in range(1000)]
    document = read(xlsx_bytes({"Data": rows}), "rows.xlsx", max_chars=500)
    assert document.truncated
    assert "row5" in document.text and "row50" not in document.text


# --- cells -----------------------------------------------------------------------------------------


def test_a_workbook_stops_after_the_cell_limit_and_says_so() -> None:
    data = xlsx_bytes({"First": [[r * 10 + c for c in range(10)] for r in range(30)], "Second": [["never read"]]})
    document = read(data, "cells.xlsx", sheet_max_cells=100)
    assert document.notes == ["Stopped after 100 cells"]
    numbers = [value for line in document.text.splitlines() if not line.startswith("#") for value in line.split("\t")]
    assert len(numbers) == 100
    assert "never read" not in document.text and "# Sheet: Second" not in document.text


def test_the_cell_note_names_the_configured_million() -> None:
    data = xlsx_bytes({"Only": [[1, 2]]})
    assert read(data, "small.xlsx").notes == []
    text = TextBudget(1000)
    from sluice.parsing.spreadsheet import SheetText

    sheets = SheetText(text, 1_000_000)
    sheets.stopped = True
    sheets.finish()
    assert text.notes == ["Stopped after 1,000,000 cells"]


def _declare_huge_range(data: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        sheet = archive.read("xl/worksheets/sheet1.xml").decode()
    sheet = re.sub(r'<dimension ref="[^"]*"/>', '<dimension ref="A1:XFD1048576"/>', sheet)
    assert "A1:XFD1048576" in sheet
    # Three real cells, one of them in the last column of the last row.
    sheet = sheet.replace(
        "</sheetData>",
        '<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>far corner</t></is></c></row></sheetData>',
    )
    return replace_zip_member(data, "xl/worksheets/sheet1.xml", sheet.encode())


def test_a_sheet_declaring_a_huge_range_costs_what_its_real_cells_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    import openpyxl

    data = _declare_huge_range(xlsx_bytes({"Sparse": [["top left", "next"]]}))
    declared = openpyxl.load_workbook(io.BytesIO(data), read_only=True)["Sparse"]
    assert (declared.max_row, declared.max_column) == (1048576, 16384)  # what a naive reader would walk

    from sluice.parsing.spreadsheet import SheetText

    counted: list[int] = []
    original = SheetText.row
    monkeypatch.setattr(SheetText, "row", lambda self, cells: counted.append(len(cells)) or original(self, cells))
    started = time.monotonic()
    document = read(data, "sparse.xlsx")
    assert time.monotonic() - started < 2
    assert sum(counted) == 3
    lines = document.text.splitlines()
    assert lines[:2] == ["# Sheet: Sparse", "top left\tnext"]
    assert lines[2].strip() == "far corner"  # the gap to column XFD is a few tabs, not 16,382
    assert len(document.text) < 200


# --- NUL, sparse, scanned, preview ---------------------------------------------------------------


def test_stray_nul_characters_in_a_text_file_are_removed() -> None:
    body = b"A log line that a crashed writer padded.\n" * 40
    document = read(b"alpha\x00beta\x00\n" + body, "nul.txt")
    assert document.text.startswith("alphabeta\nA log line")
    assert "\x00" not in document.text


def test_nul_characters_are_removed_by_the_budget_whatever_the_reader() -> None:
    text = TextBudget(100)
    text.add("a\x00b")
    text.add("\x00\x00c")
    assert text.finish().text == "abc"


def test_lone_surrogates_become_replacement_characters() -> None:
    text = TextBudget(100)
    text.add("ok \ud800 ok")
    assert text.finish().text == "ok \ufffd ok"


def test_a_pdf_of_images_fails_with_the_scanned_sentence() -> None:
    with pytest.raises(ScannedPdfError) as caught:
        read(image_only_pdf(pages=3), "scan.pdf")
    assert caught.value.message == "Scanned PDF — 3 pages found but no text could be extracted"


def test_a_pdf_of_empty_pages_is_empty_not_scanned() -> None:
    document = read(pdf_bytes(["", ""]), "blank.pdf")
    assert document.text == "" and document.preview is None


def test_a_born_digital_page_that_paints_nothing_is_blank_not_scanned() -> None:
    # A content stream that only fills the page white is no image of text: the chunk stage calls it sparse.
    document = read(pdf_with_blank_content(pages=2), "blank.pdf")
    assert document.text == ""


def test_letters_drawn_as_paths_are_still_a_scan() -> None:
    with pytest.raises(ScannedPdfError) as caught:
        read(pdf_with_vector_letters(), "outlined.pdf")
    assert caught.value.message == "Scanned PDF — 1 page found but no text could be extracted"


def test_ligature_characters_are_read_as_their_letters() -> None:
    # Typeset PDFs carry ﬁ, ﬂ and ﬃ as single characters: "office" and "Oberfläche" must match as written.
    document = read(pdf_with_ligatures("the o\ufb03ce \ufb01le on the Oberfl\u00e4che \ufb02ows"), "typeset.pdf")
    assert document.text == "the office file on the Oberfläche flows"


def test_the_too_sparse_sentence_carries_the_word_count() -> None:
    error = too_sparse(ParsedDocument(text="just three words").word_count)
    assert error.message.startswith("Document is too sparse to index")
    assert "3 words" in error.message
    assert error.code == "DOCUMENT_TOO_SPARSE"


def test_the_preview_is_the_first_three_non_empty_lines_within_240_characters() -> None:
    document = ParsedDocument(text="\n\n  first  \n\nsecond\nthird\nfourth")
    assert document.preview == "first\nsecond\nthird"
    long_line = ParsedDocument(text="x" * 1000)
    assert len(long_line.preview) == 240
    assert ParsedDocument(text=" \n ").preview is None


def test_an_image_has_no_text_and_no_preview() -> None:
    from parsing_samples import png_bytes

    document = read(png_bytes(), "photo.png")
    assert document.text == "" and document.preview is None


def test_a_pdf_behind_leading_garbage_is_found_and_read() -> None:
    # Mail gateways and broken uploaders put bytes before the header: 4 KB of them here, past the first KB.
    data = b"\x00\x13MIME-junk\r\n" * 300 + pdf_bytes(["The pump is serviced every spring."])
    assert data.find(b"%PDF-") > 1024
    assert read(data, "forwarded.pdf").text == "The pump is serviced every spring."


def test_a_pdf_that_cannot_be_repaired_says_what_was_tried() -> None:
    from sluice.errors import ParseError

    with pytest.raises(ParseError) as caught:
        read(b"%PDF-1.7\n" + b"\x8f\x02 not an object at all " * 50, "broken.pdf")
    assert caught.value.message == (
        "This PDF could not be read: it is damaged or incomplete, and MuPDF's repair of its "
        "cross-reference table could not rebuild it."
    )
