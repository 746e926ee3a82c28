"""A sharepoint source through the local stack, against the Graph double (tests/graph_double.py: the
documented API on loopback; there is no local SharePoint). A source is created through the API with a
microsoft_app secret, run by the state machine, its files ingested by the ordinary pipeline and
searched; a second run is "nothing changed" from the kept delta link (nothing listed, downloaded or
embedded); a change and a deletion are followed; the connector is published with its schema and
secret kind, and the preview says who will read what it ingests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.test_sync_remote_stores import ORG, counts, text, world  # noqa: F401 - the module's fixture
from tests.graph_double import SITE_HOST, SITE_PATH, Fault, GraphDouble

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SITE = f"https://{SITE_HOST}/{SITE_PATH}"


@pytest.fixture(scope="module")
def graph() -> Iterator[GraphDouble]:
    g = GraphDouble(page_size=3)
    yield g
    g.close()


def test_a_sharepoint_folder_syncs_then_answers_nothing_changed_then_follows_changes(world, graph):  # noqa: F811
    w = world
    graph.put("Handbook/leave.md", text("lighthouse"))
    graph.put("Handbook/travel/caravan.md", text("caravan"))
    graph.put("Handbook/logo.bin", b"\x00\x01 not a kind Sluice reads")
    graph.put("Elsewhere/orchard.md", text("orchard"))  # outside the folder: not listed
    kb = w.base("sharepoint docs")
    secret = w.secret("microsoft_app", graph.secret())
    address = f"sharepoint://{graph.drive_id}/Handbook/"

    first = w.run(w.source(kb, "sharepoint", {"site_url": SITE, "folder": "Handbook"}, secret))
    assert first["status"] == "succeeded" and first["listing_complete"], first
    assert counts(first) == (3, 2, 0, 0, 0, 0)
    outcomes = w.outcomes(first)
    assert set(outcomes) == {address + p for p in ("leave.md", "travel/caravan.md", "logo.bin")}
    assert outcomes[address + "logo.bin"][0] == "ignored"
    assert any("caravan" in h["content"] for h in w.search(kb, "Who reviews caravan requests?"))
    source = {"id": first["source_id"], "kb_id": kb["id"]}

    # nothing changed: the kept delta link answers with no changes; nothing listed, fetched or embedded
    before, fetched, embedded = len(graph.log), w.fetched.get("sharepoint", 0), w.embed_calls()
    second = w.run(source)
    assert second["status"] == "succeeded" and counts(second) == (0, 0, 0, 0, 0, 0), second
    assert graph.downloads(before) == 0 and [r.path.rsplit("/", 1)[-1] for r in graph.log[before:]] == [
        "token", "delta"]
    assert (w.fetched.get("sharepoint", 0), w.embed_calls(), len(w.documents(kb))) == (fetched, embedded, 2)

    # an edit and a deletion: the drive is listed again, the edited file alone downloaded, the other removed
    graph.put("Handbook/travel/caravan.md", text("greenhouse"))
    graph.delete("Handbook/leave.md")
    before = len(graph.log)
    third = w.run(source)
    assert third["status"] == "succeeded" and counts(third) == (2, 0, 1, 0, 0, 1), third
    assert graph.downloads(before) == 1
    assert [d["source_path"] for d in w.documents(kb)] == [address + "travel/caravan.md"]
    assert any("greenhouse" in h["content"] for h in w.search(kb, "greenhouse desk"))

    # and again nothing changed
    fourth = w.run(source)
    assert counts(fourth) == (0, 0, 0, 0, 0, 0) and fourth["status"] == "succeeded", fourth

    # a deletion, then a page of the drive's listing that fails: the listing is not whole, nothing is removed
    graph.delete("Handbook/travel/caravan.md")
    graph.faults.append(Fault("token=page", 403, 1))
    cut = w.run(source)
    assert cut["listing_complete"] is False and cut["counts"]["removed"] == 0, cut
    assert "(accessDenied)" in (cut["error"] or "") and "nothing was synced or removed" in (cut["error"] or "")
    assert [d["source_path"] for d in w.documents(kb)] == [address + "travel/caravan.md"]
    # the next run lists the drive whole again (the cut kept no delta link) and removes it
    again = w.run(source)
    assert again["status"] == "succeeded" and again["counts"]["removed"] == 1, again


def test_the_connector_is_published_and_previewed_with_its_secret_kind(world, graph):  # noqa: F811
    listed = {c["connector"]: c for c in world.api.get("/rag/sync/connectors").json()["connectors"]}
    sp = listed["sharepoint"]
    assert sp["secret_kind"] == "microsoft_app" and "delta" in sp["change_signal"]
    assert {"site_url", "library", "user", "drive_id", "folder", "max_files"} == set(sp["config_schema"]["properties"])

    kb = world.base("sharepoint preview")
    secret = world.secret("microsoft_app", graph.secret())
    url = f"/kb/{kb['id']}/sync-sources/preview"
    resp = world.api.post(url, json={"connector": "sharepoint", "config": {"site_url": SITE}, "secret_id": secret})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {
        "sentence": f"The secret {secret} can read whatever it has been granted, and everything it ingests becomes "
                    f"searchable in {kb['collection_name']} by everyone in the organization {ORG} who can view "
                    "this base.", "refusals": {}}
    refused = world.api.post(url, json={"connector": "sharepoint", "config": {"site_url": SITE + "?x=1",
                                                                              "folder": "a/../b"}})
    assert refused.status_code == 200 and set(refused.json()["refusals"]) >= {"config.site_url", "secret_id"}
    wrong_kind = world.secret("git_token", {"token": "t"})
    resp = world.api.post(url, json={"connector": "sharepoint", "config": {"site_url": SITE},
                                     "secret_id": wrong_kind})
    assert "microsoft_app" in resp.json()["refusals"]["secret_id"]
