"""The plain question of issue 27: three short notes saying the boathouse key is green, each inside
a page of office boilerplate, among pages of boilerplate alone. "which key opens the boathouse"
shares only "key" and "boathouse" with the notes (no strong lexical match: "opens" is in none of
them), and every chunk's cosine to the short question is low, the notes' included. Under the old
fixed 0.30 cosine floor the search answered nothing while the console ranked the notes first; the
bundled model's own gate (the embedding catalog's ``vec_gate``) and the BM25 side bring them back.

Through the local runtime: upload, parse, chunk, embed, then POST /rag/search over HTTP.
"""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.test_search_planted_fact import wait_all_done

pytestmark = pytest.mark.e2e

# Dense office boilerplate, one paragraph each (each under the bundled model's chunk size, so a
# paragraph is a chunk): nothing here is about keys or boats.
BOILERPLATE = [
    "Quarterly revenue recognition follows IFRS 15; invoices above EUR 25,000 need a second approver in "
    "the procurement system, and purchase orders are matched against goods receipts before payment runs "
    "on Thursdays. The payroll cut-off is the 20th of each month, pension contributions are deducted at "
    "source, and changes to bank details require a signed form from human resources and a call-back check.",
    "Server maintenance windows are on Sunday nights between 01:00 and 04:00 UTC; change requests go to "
    "the advisory board by Wednesday with a rollback plan, and incidents are logged in the ticketing tool "
    "with a severity, an owner and a customer impact statement agreed with the duty manager.",
    "Expense claims are submitted through the finance portal with itemised receipts attached; claims "
    "older than ninety days are not reimbursed, mileage is paid at the published rate, and client "
    "entertainment above EUR 150 per head needs the written approval of a director before the event.",
    "Annual appraisals open in October: objectives are agreed with the line manager, evidence is "
    "attached in the talent system, calibration panels meet in November and salary letters are issued "
    "in January together with the revised bonus scheme and the updated grading framework.",
]

NOTES = [
    "For the record, the boathouse key is green.",
    "One more thing: the boathouse key is green.",
    "Also, the boathouse key is green.",
]


# Which boilerplate paragraph holds which note: each gives the bundled model a cosine of 0.22-0.29
# to the question (measured when the test was written), under the old fixed floor of 0.30.
HOLDERS = (0, 2, 3)


def note_paragraph(i: int) -> str:
    """Note ``i`` inside a paragraph of boilerplate, after its first sentence: one chunk, mostly about
    something else."""
    sentences = BOILERPLATE[HOLDERS[i]].split(". ")
    return ". ".join(sentences[:1] + [NOTES[i].rstrip(".")] + sentences[1:])


def page(parts: list[str]) -> bytes:
    return ("\n\n".join(parts) + "\n").encode()


@pytest.fixture(scope="module")
def office(runtime, client_for):
    org = f"org-{uuid.uuid4().hex[:6]}"
    api = client_for(f"olga-{org}", org, ["collections:view", "collections:edit"])
    kb = api.post("/kb", json={"name": "Office notes", "scope": "org"}).json()
    files = []
    for i in range(len(NOTES)):
        # the note in the middle of a page of boilerplate: one chunk, mostly about something else
        # the note's paragraph first, then the others: no two of them fit in one chunk together
        others = [p for j, p in enumerate(BOILERPLATE) if j != HOLDERS[i]]
        files.append((f"note_{i}.txt", page([note_paragraph(i), *others])))
    for i in range(12):
        parts = BOILERPLATE[i % 4:] + BOILERPLATE[:i % 4]
        files.append((f"policy_{i:02d}.txt", page(parts[: 2 + i % 3])))
    ids = {}
    for name, data in files:
        resp = api.post(f"/kb/{kb['id']}/documents", files={"file": (name, data)})
        assert resp.status_code == 202, resp.text
        ids[resp.json()["id"]] = name
    wait_all_done(api, list(ids))
    return api, kb


def test_a_plain_question_finds_the_three_notes_first(office):
    api, kb = office
    body = {"query": "which key opens the boathouse", "collections": [kb["collection_name"]]}

    resp = api.post("/rag/search", json=body)

    assert resp.status_code == 200, resp.text
    results = resp.json()["results"]
    assert sorted(r["filename"] for r in results[:3]) == ["note_0.txt", "note_1.txt", "note_2.txt"]
    # none of them holds every word of the question: the cosine gate of the model let them through
    seen = api.post("/rag/search/diagnostic", json=body).json()
    notes = [c for c in seen["candidates"] if "boathouse key is green" in c["content"]]
    assert {c["filename"] for c in notes} == {"note_0.txt", "note_1.txt", "note_2.txt"}
    assert all(c["gate"] == "vec_gate" and c["passed"] and not c["strong_lexical_match"] for c in notes)
    assert all(c["vec_score"] < 0.30 for c in notes)  # the old fixed floor would have dropped them all


def test_a_question_about_nothing_here_still_answers_nothing(office):
    api, kb = office

    resp = api.post("/rag/search", json={"query": "volcanic eruption lava flows in Iceland",
                                         "collections": [kb["collection_name"]]})

    assert resp.status_code == 200, resp.text
    assert resp.json()["results"] == []


@pytest.mark.parametrize("alpha", [-0.1, 1.5])
def test_an_alpha_out_of_range_is_refused_naming_the_field(office, alpha):
    api, kb = office

    resp = api.post("/rag/search", json={"query": "boathouse", "collections": [kb["collection_name"]],
                                         "alpha": alpha})

    assert resp.status_code == 422, resp.text
    assert "alpha" in resp.json()["error"]["details"]["fields"]
