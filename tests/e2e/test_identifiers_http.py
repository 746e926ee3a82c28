"""R-SRCH-10 through the local stack: a collection of mixed real documents (from ../shared/corpus/real
when it is beside the repository; generated office pages always) with notes that each name one
identifier inside a page of boilerplate. Pasting "<a few words> <identifier>" into /rag/search
returns the note holding it first, with the defaults and with alpha 0.9; the diagnostic view says
when the identifier rule decided. Upload, parse, chunk, embed, then search over HTTP."""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import CORPUS
from tests.e2e.test_plain_question import BOILERPLATE, page
from tests.e2e.test_search_planted_fact import wait_all_done

pytestmark = pytest.mark.e2e

# Small real files of several kinds that parse to text (MANIFEST.tsv: parse_text).
REAL = ["text/linn.txt", "docx/testWORD.docx", "docx/footnotes.docx",
        "pdf/github_sample.pdf", "pdf/testPDF.pdf", "html/testHTML_embedded_img.html", "docx/test.docx"]

# Identifiers of the shapes people paste: a hex code, an order number, an error code, a part number,
# an RFC, a ticket.
IDENTIFIERS = {
    "ledger": ("The reference code for ledger 7 is zqb5f7f93f26.", "reference code zqb5f7f93f26"),
    "order": ("Order ORD-2024-05654 was shipped to the Rotterdam warehouse.", "order ORD-2024-05654"),
    "error": ("The nightly import stopped with error code E11000 on the customers table.", "error E11000"),
    "part": ("Replace the gasket with part SKU 4471-B when the seal leaks.", "gasket part 4471-B"),
    "ticket": ("Escalation ticket INC-88231 is owned by the platform team.", "who owns INC-88231"),
}


@pytest.fixture(scope="module")
def mixed(runtime, client_for):
    org = f"org-{uuid.uuid4().hex[:6]}"
    api = client_for(f"ivy-{org}", org, ["collections:view", "collections:edit"])
    kb = api.post("/kb", json={"name": "Mixed with identifiers", "scope": "org"}).json()
    files = [(f"note-{name}.txt", page([f"{sentence} {BOILERPLATE[i % 4]}", BOILERPLATE[(i + 1) % 4]]))
             for i, (name, (sentence, _)) in enumerate(IDENTIFIERS.items())]
    # siblings: the same boilerplate and the same kind of sentence, another identifier
    files += [(f"sibling-{i}.txt", page([f"The reference code for ledger {i + 10} is zq{i}a9c{i}e0d1{i}. "
                                         f"{BOILERPLATE[i % 4]}"])) for i in range(6)]
    files += [(f"policy-{i}.txt", page(BOILERPLATE[i % 4:] + BOILERPLATE[: i % 4])) for i in range(6)]
    if CORPUS.is_dir():
        files += [(path.split("/")[-1], (CORPUS / path).read_bytes()) for path in REAL if (CORPUS / path).is_file()]
    ids = []
    for name, data in files:
        resp = api.post(f"/kb/{kb['id']}/documents", files={"file": (name, data)})
        assert resp.status_code == 202, resp.text
        ids.append(resp.json()["id"])
    wait_all_done(api, ids)
    return api, kb


@pytest.mark.parametrize("name", sorted(IDENTIFIERS))
def test_the_note_holding_the_identifier_comes_first(mixed, name):
    api, kb = mixed
    query = IDENTIFIERS[name][1]
    for alpha in (None, 0.9):
        body = {"query": query, "collections": [kb["collection_name"]], **({"alpha": alpha} if alpha else {})}
        resp = api.post("/rag/search", json=body)
        assert resp.status_code == 200, resp.text
        results = resp.json()["results"]
        assert results and results[0]["filename"] == f"note-{name}.txt", (alpha, [r["filename"] for r in results])


def test_the_diagnostic_view_says_when_the_identifier_decided(mixed):
    api, kb = mixed
    body = {"query": "reference code zqb5f7f93f26", "collections": [kb["collection_name"]], "alpha": 0.9}
    seen = api.post("/rag/search/diagnostic", json=body).json()["candidates"]
    first = seen[0]
    assert first["filename"] == "note-ledger.txt" and first["rare_identifiers_held"] == 1
    assert first["passed"]
    assert not any(c["lifted_by_identifier"] for c in seen[1:])
    assert all(c["rare_identifiers_held"] == 0 for c in seen[1:])
