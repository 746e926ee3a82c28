"""OCR in the readers (R-PARSE-7): which pages are recognised, the limit, the notes, images as documents.

An engine that records its calls stands in where the question is *which* pages are sent; Tesseract
itself reads the pages where the question is whether the words come back (skipped without it).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from parsing_samples import budget

from sluice.errors import ScannedPdfError
from sluice.parsing import extract, extract_isolated, sniff
from sluice.parsing.images import ImageOptions
from sluice.parsing.ocr import PageImage, Recognised, TesseractEngine
from sluice.parsing.options import ParserOptions
from tests.ocr_samples import (
    born_digital_pdf,
    needs_tesseract,
    page_lines,
    page_png,
    scanned_jpeg,
    scanned_pdf,
    scanned_tiff,
)


class Recorder:
    """An engine that answers "page N" for each page it is sent, or an error for the pages in ``fail``."""

    def __init__(self, name: str = "tesseract", fail: frozenset[int] = frozenset()) -> None:
        self.name = name
        self.fail = fail
        self.sent: list[PageImage] = []

    def languages(self) -> frozenset[str] | None:
        return frozenset({"eng"})

    def recognise(self, pages: Sequence[PageImage], languages: str) -> list[Recognised]:
        self.sent.extend(pages)
        return [
            Recognised(p.number, None, "unreadable scan")
            if p.number in self.fail
            else Recognised(p.number, f"recognised page {p.number}", None)
            for p in pages
        ]


def read(data: bytes, name: str, options: ParserOptions, engine: Recorder, images: ImageOptions | None = None):
    return extract(data, sniff(data, name), budget(), images, options, engine)


def test_auto_leaves_a_born_digital_page_alone() -> None:
    engine = Recorder()
    document = read(born_digital_pdf([page_lines(0)]), "a.pdf", ParserOptions(ocr="auto"), engine)
    assert engine.sent == []
    assert document.ocr_pages == 0 and document.parser == "pymupdf"
    assert "The quick brown fox" in document.text


def test_force_recognises_a_born_digital_page() -> None:
    engine = Recorder()
    document = read(born_digital_pdf([page_lines(0), page_lines(1)]), "a.pdf", ParserOptions(ocr="force"), engine)
    assert [p.number for p in engine.sent] == [1, 2]
    assert engine.sent[0].dpi == 300 and engine.sent[0].png.startswith(b"\x89PNG")
    assert document.ocr_pages == 2
    assert document.text == "recognised page 1\n\nrecognised page 2"


def test_auto_recognises_only_the_scanned_page_of_a_mixed_pdf() -> None:
    import pymupdf

    mixed = pymupdf.open("pdf", born_digital_pdf([page_lines(0)]))
    mixed.insert_pdf(pymupdf.open("pdf", scanned_pdf([page_lines(1)])))
    engine = Recorder()
    document = read(mixed.tobytes(), "mixed.pdf", ParserOptions(ocr="auto"), engine)
    assert [p.number for p in engine.sent] == [2]
    assert document.ocr_pages == 1
    assert document.text.startswith("The quick brown fox") and document.text.endswith("recognised page 2")


def test_max_pages_stops_ocr_with_a_note() -> None:
    engine = Recorder()
    document = read(
        scanned_pdf([page_lines(i) for i in range(3)]), "s.pdf", ParserOptions(ocr="auto", max_pages=2), engine
    )
    assert [p.number for p in engine.sent] == [1, 2]
    assert document.ocr_pages == 2
    assert document.notes == [
        "OCR stopped at the 2-page limit (ingestion_config.parser.max_pages): 1 page that needed it was not recognised"
    ]


def test_a_page_ocr_cannot_read_is_counted_in_a_note() -> None:
    engine = Recorder(fail=frozenset({2}))
    document = read(scanned_pdf([page_lines(i) for i in range(3)]), "s.pdf", ParserOptions(ocr="auto"), engine)
    assert document.ocr_pages == 2
    assert document.notes == ["OCR could not read 1 page (2): unreadable scan; their text is missing"]
    assert "recognised page 1" in document.text and "recognised page 3" in document.text


def test_a_scan_no_page_of_which_ocr_reads_still_fails_saying_why() -> None:
    engine = Recorder(fail=frozenset({1}))
    with pytest.raises(ScannedPdfError) as caught:
        read(scanned_pdf([page_lines(0)]), "s.pdf", ParserOptions(ocr="auto"), engine)
    assert caught.value.message == (
        "Scanned PDF — 1 page found but no text could be extracted "
        "(OCR: OCR could not read 1 page (1): unreadable scan; their text is missing)"
    )


def test_ocr_off_a_scan_fails_with_the_scanned_sentence() -> None:
    with pytest.raises(ScannedPdfError) as caught:
        read(scanned_pdf([page_lines(0)]), "s.pdf", ParserOptions(ocr="off"), Recorder())
    assert caught.value.message == "Scanned PDF — 1 page found but no text could be extracted"


def test_a_scanned_pages_own_image_is_not_described_but_a_figure_on_a_text_page_is() -> None:
    import pymupdf

    document = pymupdf.open("pdf", scanned_pdf([page_lines(0)]))
    figure = pymupdf.open("pdf", born_digital_pdf([page_lines(1)]))
    figure[0].insert_image(pymupdf.Rect(72, 300, 372, 500), stream=page_png(["a chart"], dpi=100))
    document.insert_pdf(figure)
    options = ImageOptions(max_images=10, min_pixels=100, max_side=2048, max_bytes=5_000_000)
    parsed = read(document.tobytes(), "s.pdf", ParserOptions(ocr="auto"), Recorder(), images=options)
    # The scan of page 1 is its text (OCR read it); the figure on page 2 is described, once.
    assert parsed.ocr_pages == 1
    assert [p.page for p in (parsed.placements or [])] == [2]
    assert len(parsed.images or []) == 1


def test_a_multi_page_tiff_is_read_page_by_page_within_max_pages() -> None:
    engine = Recorder()
    data = scanned_tiff([page_lines(i) for i in range(3)])
    document = read(data, "fax.tif", ParserOptions(ocr="auto", max_pages=2), engine)
    assert [p.number for p in engine.sent] == [1, 2]
    assert document.text == "recognised page 1\n\nrecognised page 2"
    assert document.ocr_pages == 2
    assert document.notes == [
        "OCR stopped at the 2-page limit (ingestion_config.parser.max_pages): 1 page that needed it was not recognised"
    ]


def test_an_engine_outside_the_child_gets_the_rendered_pages_and_its_text_comes_back() -> None:
    # Textract cannot run in the child (no credentials there): the child renders, this process recognises.
    engine = Recorder(name="textract", fail=frozenset({3}))
    data = scanned_pdf([page_lines(i) for i in range(3)])
    document = extract_isolated(data, sniff(data, "s.pdf"), budget(), None, ParserOptions(ocr="auto"), engine)
    assert [p.number for p in engine.sent] == [1, 2, 3]
    assert document.text.rstrip() == "recognised page 1\n\nrecognised page 2"
    assert document.ocr_pages == 2
    assert document.notes == ["OCR could not read 1 page (3): unreadable scan; their text is missing"]


@needs_tesseract
def test_tesseract_in_the_child_reads_a_scanned_pdf() -> None:
    data = scanned_pdf([page_lines(0)], dpi=150)
    document = extract_isolated(
        data, sniff(data, "s.pdf"), budget(), None, ParserOptions(ocr="auto"), TesseractEngine()
    )
    assert document.ocr_pages == 1
    assert "quick brown fox jumps over the lazy dog" in document.text
    assert "Invoice number 4471" in document.text


@needs_tesseract
@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("scan.png", page_png(page_lines(2), dpi=200)),
        ("scan.jpg", scanned_jpeg(page_lines(2))),
    ],
)
def test_tesseract_reads_an_image_document(name: str, data: bytes) -> None:
    document = extract_isolated(data, sniff(data, name), budget(), None, ParserOptions(ocr="auto"), TesseractEngine())
    assert document.ocr_pages == 1
    assert "Sphinx of black quartz" in document.text


@needs_tesseract
def test_a_language_with_no_data_reads_nothing_and_says_so() -> None:
    data = scanned_pdf([page_lines(0)])
    with pytest.raises(ScannedPdfError) as caught:
        extract(
            data,
            sniff(data, "s.pdf"),
            budget(),
            None,
            ParserOptions(ocr="auto", ocr_languages="xxx"),
            TesseractEngine(),
        )
    assert "no Tesseract language data for xxx" in caught.value.message


def test_the_factory_picks_tesseract_by_default_and_refuses_an_unknown_provider() -> None:
    from sluice.errors import OcrConfigurationError
    from sluice.parsing.ocr import engine_for

    assert engine_for("tesseract").name == "tesseract"
    with pytest.raises(OcrConfigurationError) as caught:
        engine_for("abbyy")
    assert caught.value.message == "SLUICE_OCR_PROVIDER must be one of tesseract, textract, not 'abbyy'."


def test_textract_is_the_engine_the_factory_gives_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from sluice.parsing.ocr import engine_for

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # Lambda always has one; its client is built here

    engine = engine_for("textract", max_concurrency=2, deadline=10)
    assert engine.name == "textract" and engine.languages() is None


@pytest.mark.parametrize(("declared", "expected"), [("eng+spa", ["eng", "spa"]), ("deu", ["deu"])])
def test_a_deployment_declares_what_its_tesseract_layer_reads_to_functions_without_it(
    monkeypatch: pytest.MonkeyPatch, declared: str, expected: list[str]
) -> None:
    # On AWS only the parse function carries the layer; the API's functions validate ocr_languages
    # and answer GET /rag/parsers from what the template declares (SLUICE_OCR_LANGUAGES).
    from sluice.api.views_parsers import parsers_view
    from sluice.config import reset_settings
    from sluice.parsing.ocr import available_languages

    monkeypatch.setenv("SLUICE_OCR_LANGUAGES", declared)
    monkeypatch.setenv("TESSDATA_PREFIX", "/nonexistent")  # nothing on this machine is read
    reset_settings()
    try:
        assert sorted(available_languages() or ()) == expected
        view = parsers_view("tesseract")
        assert view.ocr_available and view.ocr_languages == expected
    finally:
        reset_settings()
