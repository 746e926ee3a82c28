"""A planted fact: a contract's penalty clause among 50 unrelated documents is the top result.

Everything goes through the real path of the local runtime: multipart upload,
S3 event, parse (PyMuPDF), chunk, embed with the offline all-MiniLM-L6-v2,
then POST /rag/search over HTTP.
"""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pymupdf
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PENALTY = (
    "14. Penalty clause. If the Supplier fails to deliver the Equipment by the Delivery Date, the Supplier "
    "shall pay the Buyer a penalty of two percent (2%) of the Contract Price for each full week of delay, "
    "up to a maximum of twenty percent (20%) of the Contract Price. The parties agree that this penalty "
    "is a genuine pre-estimate of the Buyer's loss and not a punishment."
)

CONTRACT_PAGES = [
    "SUPPLY AGREEMENT\n\nThis Supply Agreement is made between Northwind Components Ltd (the Supplier) and "
    "Harbour Logistics plc (the Buyer). 1. Definitions. Equipment means the forklift chargers listed in "
    "Schedule A. Contract Price means the sum stated in Schedule B. Delivery Date means 1 March 2025. "
    "2. Scope. The Supplier shall manufacture, test and deliver the Equipment to the Buyer's depot in "
    "Rotterdam. 3. Price and payment. The Buyer shall pay the Contract Price within thirty days of a valid "
    "invoice. Invoices are issued on delivery and acceptance of the Equipment.",
    "7. Delivery. The Supplier shall deliver the Equipment on or before the Delivery Date, packed for road "
    "transport. Risk passes to the Buyer on delivery. 9. Acceptance. The Buyer inspects the Equipment within "
    "ten working days and may reject units that do not meet the specification.\n\n" + PENALTY,
    "18. Termination. Either party may terminate this Agreement by written notice if the other commits a "
    "material breach that is not remedied within thirty days. 21. Governing law. This Agreement is governed "
    "by the laws of England and Wales, and the courts of London have exclusive jurisdiction. 22. Notices. "
    "Notices are given in writing to the addresses in Schedule C.",
]

TOPICS = [
    ("sourdough", "Feed the sourdough starter twice a day with equal weights of flour and water and keep it warm."),
    ("tomatoes", "Tomato seedlings need sixteen hours of light and should be hardened off before planting out."),
    ("comets", "A comet's tail always points away from the Sun because the solar wind pushes the gas outward."),
    ("espresso", "A good espresso extracts in about twenty-five seconds from eighteen grams of finely ground coffee."),
    ("marathon", "Marathon training plans build the weekly long run gradually "
     "and taper for three weeks before race day."),
    ("bees", "Honey bees communicate the direction of flowers with a waggle dance performed inside the hive."),
    ("volcanoes", "Shield volcanoes such as Mauna Loa are built from fluid basalt lava flows over many eruptions."),
    ("chess", "In the opening, control the centre, develop knights before "
     "bishops and castle early to protect the king."),
    ("knitting", "Cast on loosely and count stitches at the end of every row to catch dropped stitches early."),
    ("jazz", "Bebop musicians improvised over fast chord changes and extended harmonies in small combos."),
    ("glaciers", "Glaciers carve U-shaped valleys and leave moraines of rock debris where the ice melts."),
    ("photosynthesis", "Chlorophyll absorbs red and blue light and plants "
     "convert carbon dioxide and water into sugar."),
    ("sailing", "When sailing upwind, trim the sails in tight and steer close-hauled at about forty-five degrees."),
    ("bicycle repair", "To fix a puncture, remove the inner tube, find the hole with water, and apply a patch."),
    ("python lists", "A Python list keeps its items in order and can grow with append or shrink with pop."),
    ("birdwatching", "Early morning is the best time for birdwatching because birds sing and feed at dawn."),
    ("pottery", "Wedge the clay to remove air bubbles before throwing a pot on the wheel."),
    ("tides", "Tides rise and fall twice a day because of the Moon's gravity pulling on the oceans."),
    ("camping", "Pitch the tent on level ground, away from dead branches, with the door facing away from the wind."),
    ("origami", "An origami crane starts from a square base folded from a single sheet of paper."),
    ("wine", "Red wine is fermented with the grape skins, which give it colour and tannin."),
    ("guitar", "Tune the guitar strings to E A D G B E, from the thickest to the thinnest."),
    ("mushrooms", "Never eat a wild mushroom unless an expert has identified it, as some are deadly."),
    ("recycling", "Rinse plastic containers and flatten cardboard boxes before putting them in the recycling bin."),
    ("football", "A penalty kick is taken from twelve yards after a foul "
     "inside the box; the keeper stays on the line."),
]
ASPECTS = [
    "Beginners often learn this from a friend or a short evening class at the community centre.",
    "Historians trace the practice back several centuries, and it varies a lot from region to region.",
]


def unrelated_documents() -> list[tuple[str, bytes]]:
    docs = []
    for i, (topic, fact) in enumerate(TOPICS):
        for j, aspect in enumerate(ASPECTS):
            text = f"# Notes on {topic}\n\n{fact} {aspect}\n"
            docs.append((f"notes_{i:02d}_{j}.md", text.encode()))
    return docs


def contract_pdf() -> bytes:
    pdf = pymupdf.open()
    for page_text in CONTRACT_PAGES:
        page = pdf.new_page()
        page.insert_textbox(pymupdf.Rect(50, 50, 545, 790), page_text, fontsize=11)
    data = pdf.tobytes()
    pdf.close()
    return data


def wait_all_done(api: httpx.Client, ids: list[str], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    pending = set(ids)
    while pending and time.monotonic() < deadline:
        for doc_id in list(pending):
            status = api.get(f"/rag/documents/{doc_id}").json()["status"]
            if status == "error":
                raise AssertionError(f"document {doc_id} failed: {api.get(f'/rag/documents/{doc_id}').json()}")
            if status == "done":
                pending.discard(doc_id)
        time.sleep(0.5)
    assert not pending, f"still processing: {pending}"


@pytest.fixture(scope="module")
def corpus(runtime, client_for):
    # An organization's base: the per-user upload limits are for private pools (R-ACC-5).
    org = f"org-{uuid.uuid4().hex[:6]}"
    api = client_for(f"paula-{org}", org, ["collections:view", "collections:edit"])
    kb = api.post("/kb", json={"name": "Contracts and notes", "scope": "org"}).json()
    ids = []
    files = [("supply_agreement.pdf", contract_pdf()), *unrelated_documents()]
    assert len(files) == 51
    for name, data in files:
        unit = "legal" if name.endswith(".pdf") else "hobbies"
        resp = api.post(f"/kb/{kb['id']}/documents", files={"file": (name, data)},
                        data={"organizational_unit": unit})
        assert resp.status_code == 202, resp.text
        ids.append(resp.json()["id"])
    wait_all_done(api, ids)
    return api, kb, ids[0]


def test_the_penalty_clause_is_the_top_result(corpus):
    api, kb, contract_id = corpus
    resp = api.post("/rag/search", json={"query": "what is the penalty clause", "collections": [kb["collection_name"]]})
    assert resp.status_code == 200, resp.text
    results = resp.json()["results"]
    top = results[0]
    assert top["filename"] == "supply_agreement.pdf"
    assert "penalty of two percent" in top["content"]
    # the citation: document, chunk, page span, unit and source
    assert top["document_id"] == contract_id
    assert top["chunk_index"] >= 0 and top["page_start"] <= 2 <= top["page_end"]
    assert top["organizational_unit"] == "legal" and top["source"] == "upload"
    assert top["vec_score"] >= 0.30 and top["score"] == max(r["score"] for r in results)


def test_the_diagnostic_lists_the_wider_pool_with_verdicts(corpus):
    api, kb, _ = corpus
    resp = api.post("/rag/search/diagnostic",
                    json={"query": "what is the penalty clause", "collections": [kb["collection_name"]]})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    cands = body["candidates"]
    # the vector top 20, and the full-text top 20 beside it (R-SRCH-1 revised): each says who found it
    # the bundled model's own cosine gate, from the embedding catalog (R-SRCH-1 revised)
    assert sum("vector" in c["found_by"] for c in cands) == 20 and body["vec_gate"] == 0.15
    assert len(cands) <= 40 and any(c["found_by"] == ["text"] for c in cands)
    assert cands[0]["filename"] == "supply_agreement.pdf"
    for c in cands:
        assert {"vec_score", "text_score", "reranker_score", "passed"} <= set(c)
        assert c["passed"] == (c["vec_score"] >= 0.15 or c["strong_lexical_match"])
        assert c["text_score"] > 0 or "vector" in c["found_by"]
    assert any(not c["passed"] for c in cands)  # no threshold: the ones a search would drop are shown too


def test_filters_narrow_the_search_over_http(corpus):
    api, kb, _ = corpus
    name = kb["collection_name"]

    def search(**extra):
        return api.post("/rag/search", json={"query": "what is the penalty clause", "collections": [name], **extra})

    hobbies = search(filters={"organizational_unit": ["hobbies"]}).json()["results"]
    assert hobbies and all(r["organizational_unit"] == "hobbies" for r in hobbies)
    assert search(filters={"document_type": ["nothing-like-this"]}).json()["results"] == []
    resp = search(filters={"organizational_unit": []})
    assert resp.status_code == 422 and "filters.organizational_unit" in resp.json()["error"]["details"]["fields"]
    resp = search(filter='source == "upload"')
    assert resp.status_code == 400 and "filter" in resp.json()["error"]["details"]["fields"]
    resp = search(filter=f'parent_doc_id == "{uuid.uuid4()}"', filters={"source": ["upload"]})
    assert resp.status_code == 400


def test_filter_values_answer_the_units_present(corpus, client_for):
    api, kb, _ = corpus
    resp = api.get(f"/rag/collections/{kb['collection_name']}/filter-values")
    assert resp.status_code == 200, resp.text
    assert resp.json()["organizational_units"] == ["hobbies", "legal"]
    stranger = client_for("stranger-on-filter-values")
    refused = stranger.get(f"/rag/collections/{kb['collection_name']}/filter-values")
    absent = stranger.get("/rag/collections/no_such_collection_here/filter-values")
    assert refused.status_code == absent.status_code == 404 and refused.content == absent.content


def test_the_cli_prints_the_same_results_as_the_api(corpus, runtime, capsys):
    from sluice import cli

    api, kb, _ = corpus
    token = api.headers["Authorization"].removeprefix("Bearer ")
    body = {"query": "what is the penalty clause", "collections": [kb["collection_name"]]}
    expected = api.post("/rag/search", json=body).json()
    args = ["search", body["query"], "-c", kb["collection_name"], "--api", runtime.api_url, "--token", token]
    assert cli.main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    assert cli.main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "supply_agreement.pdf" in lines[2] and len(lines) == 2 + len(expected["results"]) + 1
