"""R-SRCH-7 and the union pool (R-SRCH-1 revised) through the local gateway: a base chooses its text
search language from what the server offers, and a search finds a chunk by its words in that
language; the console view says which side found each candidate."""

from __future__ import annotations

import pytest

from tests.e2e.test_upload_to_search import wait_done

pytestmark = pytest.mark.e2e


def test_the_languages_a_base_may_choose_are_listed(client_for):
    listed = client_for("lena").get("/rag/text-search-languages")
    assert listed.status_code == 200
    body = listed.json()
    assert body["default"] == "simple"
    assert {"simple", "english", "spanish", "german", "french"} <= set(body["languages"])


def test_a_spanish_base_finds_canciones_for_cancion_and_says_the_text_side_did(client_for):
    api = client_for("lena")
    created = api.post("/kb", json={"name": "Música", "text_search_language": "spanish"})
    assert created.status_code == 201, created.text
    kb = created.json()
    assert kb["text_search_language"] == "spanish"
    text = "Las canciones populares de la región se cantan en las fiestas del verano.\n".encode()
    doc = api.post(f"/kb/{kb['id']}/documents", files={"file": ("fiestas.txt", text)}).json()
    assert wait_done(api, doc["id"])["status"] == "done"

    seen = api.post("/rag/search/diagnostic", json={"query": "canción", "collections": [kb["collection_name"]]})

    assert seen.status_code == 200, seen.text
    [candidate] = seen.json()["candidates"]
    assert "text" in candidate["found_by"] and candidate["text_score"] > 0


def test_a_second_base_on_the_collection_cannot_choose_another_language(client_for):
    api = client_for("lena")
    kb = api.post("/kb", json={"name": "Deutsch", "text_search_language": "german"}).json()
    refused = api.post("/kb", json={"name": "Zweite", "collection_name": kb["collection_name"],
                                    "text_search_language": "english"})
    assert refused.status_code == 400
    assert refused.json()["error"]["details"]["fields"] == {
        "text_search_language": "This collection searches text in german; a base on it must too."}
    changed = api.patch(f"/kb/{kb['id']}", json={"text_search_language": "english"})
    assert changed.status_code == 400
    assert "text_search_language" in changed.json()["error"]["details"]["fields"]
