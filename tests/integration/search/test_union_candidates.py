"""The candidate pool is the union of the vector top and the full-text top (R-SRCH-1 revised), in
the collection's text search language (R-SRCH-7). Real embedded PostgreSQL; the exact-token set is
embedded with the bundled model, as a user's notes would be."""

from __future__ import annotations

import uuid

import pytest

from sluice.embedding import EmbeddingSpec, build_embedder
from sluice.search.service import DiagnosticRequest, SearchRequest, diagnostic, search
from sluice.vectors import store
from sluice.vectors.fulltext import text_query
from sluice.vectors.search import BaseScope, find_candidates
from tests.fakes import embedder_returning
from tests.integration.search.conftest import make_base, unit, viewer
from tests.integration.search.exact_tokens import notes

MINILM = EmbeddingSpec("local", "all-MiniLM-L6-v2", 384)


@pytest.fixture(scope="module")
def minilm():
    return build_embedder(MINILM)


def write(conn, kb, texts: list[str], vectors: list[list[float]], **meta) -> list[uuid.UUID]:
    ids = [uuid.uuid4() for _ in texts]
    store.insert_chunks(conn, kb.collection_name, [
        store.ChunkRow(document_id=doc_id, kb_id=kb.id, org_id=kb.org_id, chunk_index=0, content=text,
                       embedding=vec, filename=f"{doc_id}.txt", **meta)
        for doc_id, text, vec in zip(ids, texts, vectors, strict=True)])
    return ids


@pytest.mark.parametrize("language", ["simple", "english"])
def test_each_note_is_found_first_by_its_identifier_alone(conn, minilm, language):
    # GIVEN 30 notes that differ only by one identifier each, embedded as a user's would be
    collection = f"notes_{language}"
    store.ensure_table(conn, collection, 384, language=language)
    kb = make_base(conn, collection, dim=384, language=language)
    pairs = notes(30)
    ids = write(conn, kb, [text for _, text in pairs], minilm.embed_documents([text for _, text in pairs]))

    # WHEN each identifier alone is searched, in the console view (no threshold, R-SRCH-4) and with
    # the defaults (top_k 4, candidates 8, the model's gate)
    console_first, search_first, under_gate = [], [], []
    for (ident, _), doc_id in zip(pairs, ids, strict=True):
        seen = diagnostic(conn, viewer(), DiagnosticRequest(query=ident, collections=[collection]),
                          embedder_for=lambda spec: minilm)
        console_first.append(seen.results[0].document_id == doc_id)
        found = search(conn, viewer(), SearchRequest(query=ident, collections=[collection]),
                       embedder_for=lambda spec: minilm)
        own = next(c for c in found.candidates if c.document_id == doc_id)
        under_gate.append(own.vec_score < own.vec_gate)  # type: ignore[operator]
        search_first.append(bool(found.results) and found.results[0].document_id == doc_id)

    # THEN each note ranks first for its own identifier, in the console and through search(): one
    # under the cosine gate passes as a strong lexical match (it holds every lexeme of the query)
    assert all(console_first), [ident for (ident, _), ok in zip(pairs, console_first, strict=True) if not ok]
    assert all(search_first), [ident for (ident, _), ok in zip(pairs, search_first, strict=True) if not ok]
    assert any(under_gate)  # the case the strong match is for: some notes' cosine is under the gate


def test_a_keyword_only_match_outside_the_vector_top_is_a_candidate_with_both_scores(conn):
    collection = "keyword_only"
    store.ensure_table(conn, collection, 8)
    kb = make_base(conn, collection)
    query_vec = unit([1, 0, 0, 0, 0, 0, 0, 0])
    near = [unit([1, 0.01 * i, 0, 0, 0, 0, 0, 0]) for i in range(1, 21)]
    write(conn, kb, [f"routine paragraph {i} about nothing in particular" for i in range(20)], near)
    # far from the query's vector, but the only chunk holding its rare word
    [far_id] = write(conn, kb, ["the zanzibar protocol is signed by both parties"],
                     [unit([0.6, 0, 0.8, 0, 0, 0, 0, 0])])

    outcome = diagnostic(conn, viewer(), DiagnosticRequest(query="zanzibar", collections=[collection]),
                         embedder_for=embedder_returning(query_vec))

    by_id = {c.document_id: c for c in outcome.results}
    assert far_id in by_id
    far = by_id[far_id]
    assert far.found_by == ("text",)
    assert far.vec_score == pytest.approx(0.6, abs=1e-4)  # its cosine, computed for it
    assert far.text_score > 0
    vector_side = [c for c in outcome.results if "vector" in c.found_by]
    assert len(vector_side) == 20 and all(c.text_score == 0 for c in vector_side)


def test_a_query_with_no_lexeme_takes_the_vector_side_alone(conn):
    collection = "no_lexeme"
    store.ensure_table(conn, collection, 8)
    kb = make_base(conn, collection)
    write(conn, kb, ["alpha", "beta", "gamma"], [unit([1, i, 0, 0, 0, 0, 0, 0]) for i in range(3)])

    assert text_query(conn, collection, "english", "the of and !!! ??", [kb.id]).tsquery is None
    outcome = search(conn, viewer(), SearchRequest(query="!!! ???", collections=[collection], top_k=3),
                     embedder_for=embedder_returning(unit([1, 0, 0, 0, 0, 0, 0, 0])))
    assert [c.content for c in outcome.results] == ["alpha", "beta", "gamma"]
    assert all(c.found_by == ("vector",) for c in outcome.results)


def test_the_text_side_never_reaches_another_tenant_or_past_a_filter(conn):
    # One collection name held by two organizations; only globex's chunk, and an acme chunk outside the
    # filter, hold the searched word. The vector side is far from all three.
    collection = "shared_terms"
    store.ensure_table(conn, collection, 8)
    acme, globex = make_base(conn, collection, org="acme"), make_base(conn, collection, org="globex")
    away = [unit([0, 0, 1, 0, 0, 0, 0, 0])]
    write(conn, acme, ["an ordinary acme note"] * 1, [unit([1, 0, 0, 0, 0, 0, 0, 0])], organizational_unit="legal")
    [hidden] = write(conn, globex, ["the quokka merger memo"], away, organizational_unit="legal")
    [filtered] = write(conn, acme, ["quokka figures for finance"], away, organizational_unit="finance")

    found, _ = find_candidates(conn, collection, vector=unit([1, 0, 0, 0, 0, 0, 0, 0]), text="quokka",
                               scope=[BaseScope(acme.id, "acme")], limit=8)
    assert filtered in {c.document_id for c in found} and hidden not in {c.document_id for c in found}

    from sluice.vectors.search import ChunkFilter

    found, _ = find_candidates(conn, collection, vector=unit([1, 0, 0, 0, 0, 0, 0, 0]), text="quokka",
                               scope=[BaseScope(acme.id, "acme")], limit=8,
                               filters=ChunkFilter(organizational_units=("legal",)))
    assert [c.content for c in found] == ["an ordinary acme note"]


def test_a_spanish_base_finds_the_plural_for_the_singular(conn):
    store.ensure_table(conn, "canciones_es", 8, language="spanish")
    store.ensure_table(conn, "canciones_simple", 8, language="simple")
    docs = ["Las canciones populares de la región", "Un informe sobre el clima"]
    vectors = [unit([0, 1, 0, 0, 0, 0, 0, 0]), unit([0, 0, 1, 0, 0, 0, 0, 0])]
    for collection, language in (("canciones_es", "spanish"), ("canciones_simple", "simple")):
        write(conn, make_base(conn, collection, language=language), docs, vectors)
    query = unit([1, 0, 0, 0, 0, 0, 0, 0])  # the vector side cannot tell them apart

    def top(collection: str):
        out = diagnostic(conn, viewer(), DiagnosticRequest(query="canción", collections=[collection]),
                         embedder_for=embedder_returning(query))
        return {c.content: (c.text_score, c.found_by) for c in out.results}

    spanish = top("canciones_es")
    assert spanish[docs[0]][0] > 0 and "text" in spanish[docs[0]][1]
    assert spanish[docs[1]][0] == 0
    assert top("canciones_simple")[docs[0]][0] == 0  # unstemmed, "canción" is not "canciones"


def test_a_lexeme_held_by_too_many_chunks_is_left_out_of_the_scoring(conn, monkeypatch):
    # GIVEN 2,000 chunks: "harbour" in 10% of them, "lantern" in 4%, "quay" in 1%, "zx81" in one
    collection = "common_words"
    store.ensure_table(conn, collection, 8)
    kb = make_base(conn, collection)
    texts = [" ".join(["note"] + [word for word, every in (("harbour", 10), ("lantern", 25), ("quay", 100))
                                  if i % every == 0] + (["zx81"] if i == 7 else [])) for i in range(2000)]
    write(conn, kb, texts, [unit([1, i % 7, 0, 0, 0, 0, 0, 0]) for i in range(2000)])

    def kept(text: str) -> tuple[str, ...]:
        return tuple(lx for lx, _ in text_query(conn, collection, "simple", text, [kb.id]).weights)

    # THEN up to COMMON_LEXEME_ROWS chunks a lexeme is scored (BM25's IDF discounts a common one) ...
    assert kept("harbour lantern quay zx81") == ("harbour", "lantern", "quay", "zx81")
    # ... and past it, it is left out: no lexeme may make the lexical side score more than
    # COMMON_LEXEME_ROWS chunks (here lowered to 50, as if the table were 100x larger)
    monkeypatch.setattr("sluice.vectors.fulltext.COMMON_LEXEME_ROWS", 50)
    query = text_query(conn, collection, "simple", "harbour lantern quay zx81", [kb.id])
    assert kept("harbour lantern quay zx81") == ("quay", "zx81")
    assert query.dropped == ("harbour", "lantern")
