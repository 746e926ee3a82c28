"""Issue 37 item 5: one parse with Textract could pay three times. A first child (<= 120 s), Textract
(<= 120 s) and a second child (<= 120 s) outlived the function's 300 s, and each of the queue's
redeliveries sent every page again. Now one deadline for the whole parse comes from the Lambda's
remaining time, and the pages Textract recognised are kept per document and attempt
(stage/ocr/<doc>.<attempt>.json), so a redelivery sends none of them again. moto S3 and Textract."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto.textract.models import TextractBackend

from sluice.ingest import parse as parse_stage
from sluice.parsing import textract
from sluice.storage import stage_key
from tests.integration.ingest.test_ingest_ocr import SCAN, configure

CANNED = [{"BlockType": "PAGE", "Id": "p", "Relationships": [{"Type": "CHILD", "Ids": ["l1"]}]},
          {"BlockType": "LINE", "Id": "l1", "Text": "Quarterly revenue grew by twelve percent in the north"}]


@pytest.fixture
def sent(harness, monkeypatch) -> list[bytes]:
    """Textract (moto's) as the deployment's engine; the page images each DetectDocumentText carried."""
    monkeypatch.setattr(TextractBackend, "BLOCKS", CANNED)
    client = boto3.client("textract", region_name="us-east-1", config=Config(retries={"max_attempts": 1}))
    images: list[bytes] = []
    client.meta.events.register(
        "before-call.textract.DetectDocumentText",
        lambda params, **_: images.append(base64.b64decode(json.loads(params["body"])["Document"]["Bytes"])))
    monkeypatch.setattr(textract, "_default_client", lambda: client)
    harness.ctx.settings = harness.ctx.settings.model_copy(update={"ocr_provider": "textract"})
    configure(harness, ocr="auto")
    return images


def test_a_redelivered_parse_sends_textract_no_page_it_already_recognised(harness, sent, monkeypatch):
    h = harness
    doc_id = h.upload("scan.pdf", SCAN)
    real_write = parse_stage.write_parsed
    lost = {"once": True}

    def write_lost_once(*args: Any, **kwargs: Any) -> None:
        if lost.pop("once", False):
            raise ConnectionError("the store went away after Textract answered")  # not a refusal: redelivered
        real_write(*args, **kwargs)

    monkeypatch.setattr(parse_stage, "write_parsed", write_lost_once)
    with pytest.raises(ConnectionError):
        h.deliver(h.parse_message(doc_id))
    assert len(sent) == 2  # both scanned pages, once
    assert h.keys("stage/ocr/") == [stage_key("ocr", doc_id, 1)]

    h.deliver(h.parse_message(doc_id))  # the queue's redelivery
    assert len(sent) == 2, "a redelivery sent recognised pages to Textract again"
    doc = h.document(doc_id)
    assert doc.status == "processing" and doc.ocr_pages == 2
    assert "Quarterly revenue" in h.ctx.store.get(stage_key("parsed", doc_id, 1)).decode()


def test_a_parse_with_no_lambda_time_left_fails_with_a_sentence_before_any_textract_call(harness, sent):
    h = harness
    doc_id = h.upload("scan.pdf", SCAN)
    # 15 s left, less than the margin kept back for writing the results: nothing is started
    h.ctx = dataclasses.replace(h.ctx, time_left_ms=lambda: 15_000)
    h.deliver(h.parse_message(doc_id))
    doc = h.document(doc_id)
    assert doc.status == "error" and sent == []
    assert doc.error_message.startswith("Reading this document ran out of the time its parse had")


def test_textract_and_the_children_share_one_deadline_from_the_lambdas_remaining_time(harness, sent, monkeypatch):
    h = harness
    doc_id = h.upload("scan.pdf", SCAN)
    seen: dict[str, float] = {}
    real_engine = textract.textract_engine

    def spy(*args: Any, **kwargs: Any) -> Any:
        engine = real_engine(*args, **kwargs)
        seen["until"] = kwargs.get("until") or 0.0
        return engine

    monkeypatch.setattr(textract, "textract_engine", spy)
    h.ctx = dataclasses.replace(h.ctx, time_left_ms=lambda: 60_000)
    import time

    started = time.monotonic()
    h.deliver(h.parse_message(doc_id))
    assert h.document(doc_id).ocr_pages == 2
    # the whole parse's deadline: the Lambda's 60 s less the 20 s margin, not Textract's own 120 s
    assert 0 < seen["until"] - started <= 40.5
