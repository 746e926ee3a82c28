"""Runs of the gdrive connector through the local stack, against the loopback double of the Drive API
v3 and Google's token endpoint (tests/gdrive_double.py; there is no local Drive server). A source is
created through the API, run by the state machine, its files (a Google Doc exported to .docx among
them) ingested by the ordinary pipeline and searched; a second run changes nothing and fetches
nothing; an edited Doc is exported again and a deleted file removed. The world (an organization
editor, the pipeline's embedder and each connector's downloads counted, loopback allowed) is
tests/e2e/test_sync_remote_stores.py's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.test_sync_remote_stores import ORG, counts, text, world  # noqa: F401 - the shared fixture
from tests.gdrive_double import DOC, SHORTCUT, DriveDouble, docx

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
HOSTILE = "x' in parents or name contains 'salary"


@pytest.fixture(scope="module")
def drive() -> Iterator[tuple[DriveDouble, dict[str, str]]]:
    from tests.remote_servers import service_account_key

    key = service_account_key("set below")
    double = DriveDouble(key)
    key["token_uri"] = double.token_url
    yield double, key
    double.close()


def test_a_drive_folder_syncs_then_changes_nothing_then_follows_changes(world, drive):  # noqa: F811
    w = world
    double, key = drive
    folder = double.folder("Handbook")
    leave = double.add("leave.md", folder, text("lighthouse"), "text/markdown")
    plan = double.add("Travel plan", folder, docx(text("caravan").decode()), DOC)
    notes = double.add("notes.txt", double.folder("Notes", folder), text("orchard"))
    link = double.add("Elsewhere", folder, mime=SHORTCUT, target="1TargetOutsideTheSyncedFolder")
    kb = w.base("gdrive docs")
    source = w.source(kb, "gdrive", {"folder_id": folder, "endpoint": double.url},
                      w.secret("gcp_service_account", key))

    first = w.run(source)
    assert first["status"] == "succeeded" and first["listing_complete"], first
    assert counts(first) == (4, 3, 0, 0, 0, 0)
    outcomes = w.outcomes(first)
    assert {p: o for p, (o, _) in outcomes.items()} == {
        f"gdrive://{leave}": "new", f"gdrive://{plan}": "new", f"gdrive://{notes}": "new",
        f"gdrive://{link}": "ignored"}
    assert "shortcuts are not followed" in (outcomes[f"gdrive://{link}"][1] or "")
    hits = w.search(kb, "Who reviews caravan requests?")  # the Doc, exported to .docx and read as one
    assert any("caravan" in h["content"] for h in hits)
    assert [r.params["mimeType"] for r in double.requests("export")] == [
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"]
    names = {d["source_path"]: d["filename"] for d in w.documents(kb)}
    assert names[f"gdrive://{plan}"] == "Travel plan.docx"

    # unchanged: decided from md5Checksum and version, nothing downloaded or exported, nothing embedded
    fetched, embedded, downloads = w.fetched["gdrive"], w.embed_calls(), len(double.requests("download"))
    second = w.run(source)
    assert second["status"] == "succeeded" and counts(second) == (4, 0, 0, 3, 0, 0), second
    assert (w.fetched["gdrive"], w.embed_calls()) == (fetched, embedded)
    assert len(double.requests("download")) == downloads and len(double.requests("export")) == 1

    # the Doc edited (a new version) and a file deleted: one export, one removal
    double.update(plan, docx(text("greenhouse").decode()))
    double.delete(leave)
    third = w.run(source)
    assert counts(third) == (3, 0, 1, 1, 0, 1), third
    assert w.fetched["gdrive"] == fetched + 1 and len(double.requests("export")) == 2
    assert any("greenhouse" in h["content"] for h in w.search(kb, "greenhouse desk"))
    assert sorted(d["source_path"] for d in w.documents(kb)) == sorted([f"gdrive://{plan}", f"gdrive://{notes}"])

    # a listing that fails part-way is not whole: the file deleted since is not removed
    double.delete(notes)
    double.fail("list", 404, "notFound", after=1)  # the sub-folder's page fails
    cut = w.run(source)
    assert cut["listing_complete"] is False and cut["counts"]["removed"] == 0, cut
    assert "HTTP 404 notFound" in (cut["error"] or "") and "nothing was removed" in cut["error"]
    assert len(w.documents(kb)) == 2


def test_the_listing_and_the_preview_name_the_drive_connector(world, drive):  # noqa: F811
    w = world
    double, key = drive
    listed = {c["connector"]: c for c in w.api.get("/rag/sync/connectors").json()["connectors"]}
    assert listed["gdrive"]["secret_kind"] == "gcp_service_account"
    assert set(listed["gdrive"]["config_schema"]["properties"]) == {"folder_id", "drive_id", "recursive",
                                                                     "max_files", "endpoint"}
    assert "md5Checksum" in listed["gdrive"]["change_signal"]

    kb = w.base("gdrive preview")
    secret = w.secret("gcp_service_account", key)
    url = f"/kb/{kb['id']}/sync-sources/preview"
    before = len(double.log)
    body: dict[str, Any] = {"connector": "gdrive", "config": {"folder_id": double.root, "endpoint": double.url},
                            "secret_id": secret}
    resp = w.api.post(url, json=body)
    assert resp.status_code == 200, resp.text
    assert resp.json() == {
        "sentence": f"The secret {secret} can read whatever it has been granted, and everything it ingests "
                    f"becomes searchable in {kb['collection_name']} by everyone in the organization {ORG} "
                    "who can view this base.",
        "refusals": {}}
    resp = w.api.post(url, json={**body, "config": {"folder_id": HOSTILE}, "secret_id": None})
    refusals = resp.json()["refusals"]
    assert set(refusals) == {"config.folder_id", "secret_id"} and "letters, digits" in refusals["config.folder_id"]
    assert resp.json()["sentence"].startswith("The source's credential can read whatever")
    assert len(double.log) == before  # the preview read nothing remote

    created = w.api.post(f"/kb/{kb['id']}/sync-sources", json={
        "name": "hostile", "connector": "gdrive", "config": {"folder_id": HOSTILE}, "secret_id": secret})
    assert created.status_code == 422 and "config.folder_id" in json.dumps(created.json())
