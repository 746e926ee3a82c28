"""Issue 37 item 7: OCR spend has an operator's ceiling per document, a switch that disallows
``ocr: force``, and a per-tenant page budget per day, each said in a sentence (never a silent skip).
Real Tesseract, embedded PostgreSQL and moto S3."""

from __future__ import annotations

import pytest
from psycopg.types.json import Jsonb

from sluice.config import reset_settings
from sluice.db.connection import transaction
from sluice.errors import ValidationError
from tests.integration.ingest.test_ingest_ocr import SCAN, configure
from tests.ocr_samples import needs_tesseract

CEILING_NOTE = ("OCR stopped at this deployment's limit of 1 page a document (OCR_MAX_PAGES_PER_DOCUMENT): "
                "1 page that needed it was not recognised")
BUDGET_NOTE = ("OCR stopped at this account's budget of 3 pages a day (OCR_PAGES_PER_TENANT_PER_DAY), spent until "
               "midnight UTC: 1 page that needed it was not recognised; retry the document then")


def settle(h, doc_id):
    h.deliver(h.parse_message(doc_id))
    return h.document(doc_id)


@needs_tesseract
def test_the_operators_ceiling_per_document_stops_ocr_with_a_note(harness):
    h = harness
    h.ctx.settings = h.ctx.settings.model_copy(update={"ocr_max_pages_per_document": 1})
    configure(h, ocr="auto", max_pages=10_000)  # the writer's choice does not raise the operator's
    doc = settle(h, h.upload("scan.pdf", SCAN))
    assert doc.status == "processing", doc.error_message
    assert doc.ocr_pages == 1
    assert CEILING_NOTE in doc.parse_notes


def test_ocr_force_is_refused_when_the_operator_disallows_it(harness, monkeypatch):
    monkeypatch.setenv("OCR_FORCE_ALLOWED", "false")
    reset_settings()
    with pytest.raises(ValidationError) as caught:
        harness.upload("scan.pdf", SCAN, ingestion={"parser": {"ocr": "force"}})
    assert caught.value.status == 400
    assert caught.value.details["fields"]["ingestion_config.parser.ocr"].startswith(
        "OCR force is turned off by this deployment's operator (OCR_FORCE_ALLOWED)")


@needs_tesseract
def test_a_collection_stored_with_force_is_read_as_auto_with_a_note_once_force_is_disallowed(harness):
    h = harness
    h.ctx.settings = h.ctx.settings.model_copy(update={"ocr_force_allowed": False})
    with transaction() as conn:
        conn.execute("UPDATE knowledge_bases SET ingestion_config = %s WHERE id = %s",
                     (Jsonb({"chunk_size": 300, "parser": {"ocr": "force"}}), h.kb.id))
    doc = settle(h, h.upload("scan.pdf", SCAN))
    assert doc.ocr_pages == 2  # both pages are scans: auto reads them too
    assert ("OCR force is turned off by this deployment's operator (OCR_FORCE_ALLOWED): pages were read as "
            "with ocr: auto") in doc.parse_notes


@needs_tesseract
def test_the_daily_ocr_budget_per_tenant_is_spent_with_a_sentence(harness):
    h = harness
    h.ctx.settings = h.ctx.settings.model_copy(update={"ocr_pages_per_tenant_per_day": 3})
    configure(h, ocr="auto")
    first = settle(h, h.upload("one.pdf", SCAN))
    assert first.ocr_pages == 2 and not first.parse_notes
    second = settle(h, h.upload("two.pdf", SCAN))
    assert second.ocr_pages == 1 and BUDGET_NOTE in second.parse_notes

    # spent: a scan that OCR cannot read now fails saying why, not as an unreadable file
    third = settle(h, h.upload("three.pdf", SCAN))
    assert third.status == "error"
    assert third.error_message == (
        "Scanned PDF — 2 pages found but no text could be extracted (OCR: OCR stopped at this account's budget of "
        "3 pages a day (OCR_PAGES_PER_TENANT_PER_DAY), spent until midnight UTC: 2 pages that needed it were not "
        "recognised; retry the document then)")
