"""Scanned pages and images through the real pipeline (R-PARSE-7, R-PARSE-3): upload, parse in the
child (Tesseract for real), chunk, embed, then a search finds the words OCR read. Real embedded
PostgreSQL and moto S3; only the embedding provider is a fake."""

from __future__ import annotations

import pytest
from psycopg.types.json import Jsonb

from sluice.api.views import document_view
from sluice.db.connection import transaction
from sluice.errors import UnsupportedTypeError, ValidationError
from sluice.search.service import SearchRequest, search
from tests.integration.ingest.conftest import ALICE
from tests.ocr_samples import needs_tesseract, page_lines, page_png, scanned_pdf

OCR_OFF = (
    "Scanned PDF — 2 pages found but no text could be extracted. OCR can be turned on for the "
    "collection (ingestion_config.parser.ocr: auto) to read it."
)
IMAGE_OFF = (
    ".png images are indexed in a knowledge base only with OCR on. OCR can be turned on for the "
    "collection (ingestion_config.parser.ocr: auto) to read it."
)


def configure(h, **parser) -> None:
    config = {"chunk_size": 300, **({"parser": parser} if parser else {})}
    with transaction() as conn:
        conn.execute("UPDATE knowledge_bases SET ingestion_config = %s WHERE id = %s", (Jsonb(config), h.kb.id))


def found(h, query: str) -> list[str]:
    req = SearchRequest(query=query, collections=[h.kb.collection_name], alpha=0.0, min_vec_score=-1.0)
    with transaction() as conn:
        outcome = search(conn, ALICE, req, lambda spec: h.embedder)
    return [c.content for c in outcome.results]


SCAN = scanned_pdf([page_lines(0), page_lines(3)], dpi=150)


def test_a_scanned_pdf_with_ocr_off_fails_saying_ocr_can_be_turned_on(harness):
    h = harness
    doc_id = h.upload("scan.pdf", SCAN)
    h.deliver(h.parse_message(doc_id))
    doc = h.document(doc_id)
    assert doc.status == "error"
    assert doc.error_message == OCR_OFF


@needs_tesseract
def test_a_scanned_pdf_with_ocr_auto_is_indexed_and_its_words_are_found(harness):
    h = harness
    configure(h, ocr="auto")
    doc_id = h.upload("scan.pdf", SCAN)
    h.run_pipeline(doc_id)
    doc = h.document(doc_id)
    assert doc.status == "done", doc.error_message
    assert (doc.parser, doc.ocr_pages) == ("pymupdf", 2)
    detail = document_view(doc)  # what GET /rag/documents/{id} answers
    assert (detail.parser, detail.ocr_pages, detail.notes) == ("pymupdf", 2, [])
    assert h.chunk_count(doc_id) > 0
    hits = found(h, "quarterly revenue northern region")
    assert hits and "Quarterly revenue grew by twelve percent" in hits[0]


@needs_tesseract
def test_ocr_turned_on_for_one_upload_reads_that_scan(harness):
    h = harness
    doc_id = h.upload("scan.pdf", SCAN, ingestion={"parser": {"ocr": "force"}})
    h.run_pipeline(doc_id)
    doc = h.document(doc_id)
    assert doc.status == "done", doc.error_message
    assert doc.ocr_pages == 2


def test_an_image_with_ocr_off_is_refused_with_the_sentence(harness):
    with pytest.raises(UnsupportedTypeError) as caught:
        harness.upload("scan.png", page_png(page_lines(2), dpi=150))
    assert caught.value.message == IMAGE_OFF


def test_an_unknown_ocr_language_in_an_upload_override_is_refused_naming_the_field(harness):
    with pytest.raises(ValidationError) as caught:
        harness.upload("scan.pdf", SCAN, ingestion={"parser": {"ocr": "auto", "ocr_languages": "eng+qqq"}})
    assert caught.value.status == 400
    assert list(caught.value.details["fields"]) == ["ingestion_config.parser.ocr_languages"]


@needs_tesseract
def test_an_image_with_ocr_on_is_indexed(harness):
    h = harness
    configure(h, ocr="auto")
    doc_id = h.upload("scan.png", page_png(page_lines(2), dpi=200))
    h.run_pipeline(doc_id)
    doc = h.document(doc_id)
    assert doc.status == "done", doc.error_message
    assert doc.ocr_pages == 1 and doc.filetype == "image/png"
    hits = found(h, "sphinx black quartz")
    assert hits and "Sphinx of black quartz" in hits[0]
