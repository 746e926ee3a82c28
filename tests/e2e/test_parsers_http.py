"""GET /rag/parsers and ingestion_config.parser over HTTP (R-PARSE-7), against the local runtime."""

from __future__ import annotations

import pytest

from sluice.parsing.ocr import installed_languages, tessdata_dir, tesseract_version

pytestmark = pytest.mark.e2e


def test_the_parsers_route_lists_what_this_deployment_can_run(client_for):
    listed = client_for("pia").get("/rag/parsers")
    assert listed.status_code == 200, listed.text
    body = listed.json()
    languages = sorted(installed_languages(tessdata_dir()))
    assert body["parsers"] == ["pymupdf", "layout"]
    assert body["ocr_modes"] == ["off", "auto", "force"]
    assert body["ocr_provider"] == "tesseract"
    assert body["tesseract"] == {"available": bool(languages), "version": tesseract_version(), "languages": languages}
    assert body["ocr_languages"] == languages
    assert body["ocr_providers"] == (["tesseract"] if languages else [])
    assert body["textract"] == {"configured": False}


def test_a_collection_with_an_unknown_ocr_language_is_refused_naming_the_field(client_for):
    api = client_for("pia")
    resp = api.post("/kb", json={"name": "Scans", "scope": "personal",
                                 "ingestion_config": {"parser": {"ocr": "auto", "ocr_languages": "qqq"}}})
    assert resp.status_code == 422, resp.text
    assert list(resp.json()["error"]["details"]["fields"]) == ["ingestion_config.parser.ocr_languages"]


def test_a_collection_patched_to_an_unknown_ocr_language_is_refused_naming_the_field(client_for):
    api = client_for("pia")
    created = api.post("/kb", json={"name": "Faxes", "scope": "personal"})
    assert created.status_code == 201, created.text
    resp = api.patch(f"/kb/{created.json()['id']}",
                     json={"ingestion_config": {"parser": {"ocr": "auto", "ocr_languages": "eng+qqq"}}})
    assert resp.status_code == 422, resp.text
    assert list(resp.json()["error"]["details"]["fields"]) == ["ingestion_config.parser.ocr_languages"]
