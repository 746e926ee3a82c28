"""A confluence source through the local stack, against a double of the Confluence Cloud REST API v2 on
loopback (tests/confluence_double.py; not the real service): created through the API, run by the state
machine, its pages ingested by the ordinary pipeline and searched; a second run fetches nothing, because
every page's version.number is the one its document already carries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.confluence_double import ConfluenceDouble
from tests.e2e.test_sync_remote_stores import ORG, counts, world  # noqa: F401 - the shared fixture

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def site() -> Iterator[ConfluenceDouble]:
    d = ConfluenceDouble()
    yield d
    d.close()


def test_the_connector_listing_and_the_preview_name_confluence(world, site):  # noqa: F811
    listed = {c["connector"]: c for c in world.api.get("/rag/sync/connectors").json()["connectors"]}
    assert listed["confluence"]["secret_kind"] == "atlassian_token"
    assert set(listed["confluence"]["config_schema"]["properties"]) == {"base_url", "space_key",
                                                                       "include_attachments", "max_pages"}
    assert "version.number" in listed["confluence"]["change_signal"]

    kb = world.base("confluence preview")
    secret = world.secret("atlassian_token", site.secret())
    url = f"/kb/{kb['id']}/sync-sources/preview"
    before = len(site.log)
    resp = world.api.post(url, json={"connector": "confluence", "secret_id": secret,
                                     "config": {"base_url": site.url, "space_key": "ENG"}})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {
        "sentence": f"The secret {secret} can read whatever it has been granted, and everything it ingests becomes "
                    f"searchable in {kb['collection_name']} by everyone in the organization {ORG} who can view "
                    "this base.",
        "refusals": {}}
    # a config a create would refuse, by field, and no secret: the sentence names none
    resp = world.api.post(url, json={"connector": "confluence", "config": {
        "base_url": "https://wiki.example.com", "space_key": "ENG"}})
    assert set(resp.json()["refusals"]) == {"config.base_url", "secret_id"}
    assert "atlassian.net" in resp.json()["refusals"]["config.base_url"]
    assert resp.json()["sentence"].startswith("The source's credential can read whatever it has been granted")
    resp = world.api.post(url, json={"connector": "confluence", "secret_id": secret, "config": {
        "base_url": site.url, "space_key": "ENG,HR"}})
    assert list(resp.json()["refusals"]) == ["config.space_key"]
    assert len(site.log) == before  # nothing remote was read

    resp = world.api.post(f"/kb/{kb['id']}/sync-sources", json={
        "name": "x", "connector": "confluence", "secret_id": secret,
        "config": {"base_url": "https://acme.atlassian.net", "space_key": "a b"}})
    assert resp.status_code == 422 and list(resp.json()["error"]["details"]["fields"]) == ["config.space_key"]


def test_a_confluence_space_syncs_then_fetches_nothing_then_follows_edits(world, site):  # noqa: F811
    w = world
    eng = site.space("ENG", "Engineering")
    leave = site.page(eng, "Leave", '<ac:structured-macro ac:name="toc"/><h2>Leave policy</h2><p>Every leave '
                                    "request is reviewed by the lighthouse desk within two days.</p>")
    travel = site.page(eng, "Travel", "<p>Travel is booked through the caravan desk.</p>")
    site.attach(leave, "handbook.txt", b"The orchard desk keeps the leave handbook.\n")
    kb = w.base("confluence docs")
    source = w.source(kb, "confluence", {"base_url": site.url, "space_key": "ENG", "include_attachments": True},
                      w.secret("atlassian_token", site.secret()))
    root = f"{site.url}/wiki/spaces/ENG/pages"

    first = w.run(source)
    assert first["status"] == "succeeded" and first["listing_complete"], first
    assert counts(first) == (3, 3, 0, 0, 0, 0)
    atts = next(iter(leave.attachments))
    assert set(w.outcomes(first)) == {f"{root}/{leave.id}", f"{root}/{travel.id}",
                                      f"{root}/{leave.id}/attachments/{atts}"}
    assert any("lighthouse" in h["content"] for h in w.search(kb, "Who reviews leave requests?"))
    assert any("orchard" in h["content"] for h in w.search(kb, "Who keeps the leave handbook?"))
    names = sorted(d["filename"] for d in w.documents(kb))
    assert names == ["Leave.html", "Travel.html", "handbook.txt"], names

    # nothing changed: decided from version.number, no page or attachment fetched, nothing embedded
    fetched, embedded, before = w.fetched.get("confluence", 0), w.embed_calls(), len(site.log)
    second = w.run(source)
    assert second["status"] == "succeeded" and counts(second) == (3, 0, 0, 3, 0, 0), second
    assert (w.fetched.get("confluence", 0), w.embed_calls()) == (fetched, embedded)
    asked = {r.path.rsplit("/", 1)[-1] for r in site.requests(before)}
    assert asked == {"spaces", "pages", "attachments"}  # listings only: no page by id, no download

    # an edit and a deleted page: one fetch, one removal
    site.edit(travel, "<p>Travel is booked through the compass desk.</p>")
    del eng.pages[leave.id]
    third = w.run(source)
    assert counts(third) == (1, 0, 1, 0, 0, 2), third
    assert w.fetched["confluence"] == fetched + 1
    assert [d["source_path"] for d in w.documents(kb)] == [f"{root}/{travel.id}"]
    assert any("compass" in h["content"] for h in w.search(kb, "Who books travel?"))

    # a revoked token: the run fails in words and removes nothing
    site.tokens.clear()
    refused = w.run(source)
    assert refused["status"] == "failed" and refused["listing_complete"] is False, refused
    assert "HTTP401" in (refused["error"] or "") and "Nothing was removed" in refused["error"]
    assert len(w.documents(kb)) == 1
    site.tokens.add(site.token)
