"""Filters (R-SRCH-2) and scope (R-SRCH-3) against the real embedded PostgreSQL.

Every combination of values, a missing value included, is stored once per
tenant, with identical text, under one collection name held by two
organizations. Each filter's answer is compared with the rule computed here in
Python: OR within a dimension, AND across, dates inclusive, a chunk without a
value for a filtered dimension excluded, and never a row of the other tenant.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import date
from typing import Any

import pytest

from sluice.access import resolve_collection
from sluice.api.http import validate
from sluice.errors import CollectionNotFoundError, UnprocessableError, ValidationError
from sluice.search.service import (
    DiagnosticRequest,
    SearchFilters,
    SearchRequest,
    chunk_filter,
    diagnostic,
    filter_values,
    search,
)
from sluice.vectors import store
from sluice.vectors.search import BaseScope, find_candidates
from tests.fakes import embedder_returning
from tests.integration.search.conftest import make_base, unit, viewer

COLLECTION = "policies"
SOURCES = ("upload", "s3", None)
TYPES = ("pdf", "docx", None)
UNITS = ("legal", "hr", None)
DATES = (date(2024, 1, 1), date(2024, 6, 30), date(2024, 12, 31), None)
QUERY = unit([1, 0, 0, 0, 0, 0, 0, 0])


def grid() -> list[dict[str, Any]]:
    return [{"source": s, "document_type": t, "organizational_unit": u, "document_date": d}
            for s, t, u, d in itertools.product(SOURCES, TYPES, UNITS, DATES)]


def content_of(meta: dict[str, Any]) -> str:
    # Distinct in the first 120 characters, so dedupe never hides a row from the comparison.
    return f"{meta['source']}|{meta['document_type']}|{meta['organizational_unit']}|{meta['document_date']} policy text"


def write_tenant(conn, kb_id: uuid.UUID, org: str | None, *, stamp_org: str | None = None) -> None:
    rows = []
    for i, meta in enumerate(grid()):
        noise = [0.0] * 8
        noise[1 + i % 7] = 0.05 + 0.001 * i
        rows.append(store.ChunkRow(
            document_id=uuid.uuid5(kb_id, str(i)), kb_id=kb_id, org_id=stamp_org or org, chunk_index=0,
            content=content_of(meta), embedding=unit([1, *noise[1:]]), filename=f"doc{i}.txt", **meta))
    store.insert_chunks(conn, COLLECTION, rows)


def matches(meta: dict[str, Any], f: dict[str, Any]) -> bool:
    for dim in ("source", "document_type", "organizational_unit"):
        if dim in f and meta[dim] not in f[dim]:  # None is never in a filter: fails closed
            return False
    d = meta["document_date"]
    if "date_from" in f and (d is None or d < date.fromisoformat(f["date_from"])):
        return False
    return not ("date_to" in f and (d is None or d > date.fromisoformat(f["date_to"])))


@pytest.fixture
def tenants(conn):
    store.ensure_table(conn, COLLECTION, 8)
    acme = make_base(conn, COLLECTION, org="acme")
    globex = make_base(conn, COLLECTION, org="globex")
    write_tenant(conn, acme.id, "acme")
    write_tenant(conn, globex.id, "globex")
    # A chunk filed under acme's base but stamped with another tenant is not acme's to read.
    store.insert_chunks(conn, COLLECTION, [store.ChunkRow(
        document_id=uuid.uuid4(), kb_id=acme.id, org_id="globex", chunk_index=0, content="stray other-tenant row",
        embedding=QUERY, source="upload", document_type="pdf", organizational_unit="legal",
        document_date=date(2024, 6, 30))])
    conn.commit()
    return acme, globex


FILTERS = [
    {},
    {"source": ["upload"]},
    {"source": ["upload", "s3"]},
    {"document_type": ["pdf"]},
    {"document_type": ["docx", "pdf"]},
    {"organizational_unit": ["legal"]},
    {"organizational_unit": ["legal", "hr"]},
    {"date_from": "2024-06-30"},
    {"date_to": "2024-06-30"},
    {"date_from": "2024-06-30", "date_to": "2024-06-30"},
    {"source": ["s3"], "document_type": ["pdf"]},
    {"organizational_unit": ["hr"], "date_from": "2024-01-01", "date_to": "2024-06-30"},
    {"source": ["upload", "s3"], "document_type": ["pdf"], "organizational_unit": ["legal", "hr"],
     "date_from": "2024-01-02", "date_to": "2024-12-31"},
    {"organizational_unit": ["nobody"]},
]


@pytest.mark.parametrize("f", FILTERS, ids=lambda f: ",".join(f) or "none")
def test_each_dimension_alone_and_combined_fails_closed_within_the_tenant(conn, tenants, f):
    # GIVEN two tenants holding identical chunks under one collection name
    acme, _ = tenants
    bases = resolve_collection(conn, viewer("acme"), COLLECTION)
    # WHEN acme searches with the filter
    flt = chunk_filter(SearchFilters.model_validate(f) if f else None, None)
    found, _ = find_candidates(conn, COLLECTION, vector=QUERY, text="policy",
                                 scope=[BaseScope(b.id, b.org_id) for b in bases], limit=1000, filters=flt)
    # THEN exactly acme's chunks the rule admits come back, and no other tenant's
    expected = sorted(content_of(m) for m in grid() if matches(m, f))
    assert sorted(c.content for c in found) == expected
    assert {c.kb_id for c in found} <= {acme.id}


def test_a_missing_value_is_excluded_by_any_filter_on_its_dimension(conn, tenants):
    bases = resolve_collection(conn, viewer("acme"), COLLECTION)
    scope = [BaseScope(b.id, b.org_id) for b in bases]
    for dim, values in (("source", ["upload", "s3"]), ("document_type", ["pdf", "docx"]),
                        ("organizational_unit", ["legal", "hr"])):
        flt = chunk_filter(SearchFilters.model_validate({dim: values}), None)
        found, _ = find_candidates(conn, COLLECTION, vector=QUERY, text="", scope=scope, limit=1000, filters=flt)
        assert found and all(getattr(c, dim) is not None for c in found)
    flt = chunk_filter(SearchFilters(date_from=date(2000, 1, 1)), None)
    found, _ = find_candidates(conn, COLLECTION, vector=QUERY, text="", scope=scope, limit=1000, filters=flt)
    assert found and all(c.document_date is not None for c in found)


@pytest.mark.parametrize("f", FILTERS, ids=lambda f: ",".join(f) or "none")
def test_the_other_tenants_identical_chunk_never_comes_back_through_the_service(conn, tenants, f):
    acme, globex = tenants
    req = SearchRequest(query="policy", collections=[COLLECTION], top_k=50, candidates=200,
                        filters=SearchFilters.model_validate(f) if f else None)
    for who, base in ((viewer("acme"), acme), (viewer("globex", "gina"), globex)):
        outcome = search(conn, who, req, embedder_returning(QUERY))
        assert {c.kb_id for c in outcome.results} <= {base.id}
        assert "stray other-tenant row" not in {c.content for c in outcome.results}
        assert len(outcome.results) == min(50, sum(matches(m, f) for m in grid()))


def test_a_collection_out_of_reach_refuses_the_whole_search(conn, tenants):
    make_base(conn, "secrets", org="globex")
    req = SearchRequest(query="policy", collections=[COLLECTION, "secrets"])
    with pytest.raises(CollectionNotFoundError):
        search(conn, viewer("acme"), req, embedder_returning(QUERY))


def test_an_app_base_reads_only_untenanted_chunks(conn):
    store.ensure_table(conn, "shared", 8)
    app_base = make_base(conn, "shared", scope="app", org=None)
    store.insert_chunks(conn, "shared", [
        store.ChunkRow(document_id=uuid.uuid4(), kb_id=app_base.id, org_id=None, chunk_index=0,
                       content="for everybody", embedding=QUERY),
        store.ChunkRow(document_id=uuid.uuid4(), kb_id=app_base.id, org_id="acme", chunk_index=0,
                       content="stamped with a tenant", embedding=QUERY),
    ])
    outcome = search(conn, viewer("initech", "ivan"), SearchRequest(query="x", collections=["shared"]),
                     embedder_returning(QUERY))
    assert [c.content for c in outcome.results] == ["for everybody"]


def test_filter_values_are_the_units_present_in_scope(conn, tenants):
    acme, _ = tenants
    store.insert_chunks(conn, COLLECTION, [
        store.ChunkRow(document_id=uuid.uuid4(), kb_id=acme.id, org_id="acme", chunk_index=0, content="blank",
                       embedding=QUERY, organizational_unit="  "),
    ])
    other = make_base(conn, COLLECTION, org="globex")
    store.insert_chunks(conn, COLLECTION, [
        store.ChunkRow(document_id=uuid.uuid4(), kb_id=other.id, org_id="globex", chunk_index=0, content="x",
                       embedding=QUERY, organizational_unit="globex-only"),
    ])
    assert filter_values(conn, viewer("acme"), COLLECTION) == ["hr", "legal"]
    with pytest.raises(CollectionNotFoundError):
        filter_values(conn, viewer("initech"), COLLECTION)


def test_the_deprecated_filter_string_selects_one_document(conn, tenants):
    acme, _ = tenants
    doc = uuid.uuid5(acme.id, "5")
    req = SearchRequest(query="policy", collections=[COLLECTION], top_k=10, candidates=50,
                        filter=f'parent_doc_id == "{doc}"')
    outcome = search(conn, viewer("acme"), req, embedder_returning(QUERY))
    assert [c.document_id for c in outcome.results] == [doc]
    # another tenant's document id finds nothing, not its chunks
    other = uuid.uuid5(tenants[1].id, "5")
    req = req.model_copy(update={"filter": f'parent_doc_id == "{other}"'})
    assert search(conn, viewer("acme"), req, embedder_returning(QUERY)).results == []


@pytest.mark.parametrize("expression", ['source == "upload"', 'parent_doc_id == "x" AND source == "s3"',
                                        "parent_doc_id == 'abc'", 'parent_doc_id == "not-a-uuid"', ""])
def test_any_other_filter_string_is_refused_with_400(expression):
    with pytest.raises(ValidationError) as err:
        chunk_filter(None, expression)
    assert err.value.status == 400 and "filter" in err.value.details["fields"]


def test_both_forms_at_once_are_refused_with_400():
    with pytest.raises(ValidationError) as err:
        chunk_filter(SearchFilters(source=["upload"]), f'parent_doc_id == "{uuid.uuid4()}"')
    assert err.value.status == 400


@pytest.mark.parametrize("body", [
    {"filters": {"source": []}},
    {"filters": {"document_type": []}},
    {"filters": {"organizational_unit": []}},
    {"filters": {"organizational_unit": [" "]}},
    {"filters": {"date_from": "2024-07-01", "date_to": "2024-06-30"}},
    {"filters": {"tenant": ["acme"]}},
    {"filters": {"kb_id": "x"}},
    {"org_id": "acme"},
])
def test_empty_lists_and_unknown_fields_are_422_naming_the_field(body):
    with pytest.raises(UnprocessableError) as err:
        validate(SearchRequest, {"query": "q", "collections": ["c"], **body})
    assert err.value.status == 422 and err.value.details["fields"]


def test_the_diagnostic_shows_every_candidate_with_its_verdict(conn, tenants):
    req = DiagnosticRequest(query="policy", collections=[COLLECTION], filters=SearchFilters(document_type=["pdf"]))
    outcome = diagnostic(conn, viewer("acme"), req, embedder_returning(QUERY))
    # R-SRCH-4: the vector top 20 and the lexical top 20 ("policy" is in every chunk), both filtered
    assert sum("vector" in c.found_by for c in outcome.results) == 20
    assert sum("text" in c.found_by for c in outcome.results) == 20
    assert all(c.document_type == "pdf" for c in outcome.results)
    assert all(c.kb_id == tenants[0].id for c in outcome.results)
