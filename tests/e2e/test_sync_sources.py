"""Sync sources over HTTP (R-SYNC-1, R-SYNC-5): who manages a source, what a config may hold,
which secret a source may name, repoint and clone, one run at a time, a run's progress while it
goes, the audit trail, and `sluice sync run`."""

from __future__ import annotations

import threading
import uuid

import pytest

from sluice.db import sync_sources
from sluice.db.connection import transaction
from tests.e2e.sync_support import ORG, PERMS, SyncWorld, make_secret, sync_world_fixture  # noqa: F401 - the fixture

pytestmark = pytest.mark.e2e

ABSENT = {"error": {"code": "NOT_FOUND", "message": "Collection not found", "details": {}}}


def body(w: SyncWorld, bucket: str = "some-bucket", **extra):
    return {"name": "Docs", "connector": "s3", "config": {"bucket": bucket}, "secret_id": w.secret_id, **extra}


def audit(source_id: str) -> list[sync_sources.AuditEntry]:
    with transaction() as conn:
        return sync_sources.audit_trail(conn, uuid.UUID(source_id))


def test_the_connector_listing_says_what_a_source_takes(sync_world):
    resp = sync_world.api.get("/rag/sync/connectors")
    assert resp.status_code == 200
    listed = {c["connector"]: c for c in resp.json()["connectors"]}
    s3 = listed["s3"]
    assert s3["connector"] == "s3" and s3["secret_kind"] == "aws_credentials"
    kinds = {name: listed[name]["secret_kind"] for name in ("azure_blob", "gcs", "git")}
    assert kinds == {"azure_blob": "azure_storage", "gcs": "gcp_service_account", "git": "git_token"}
    assert set(listed["azure_blob"]["config_schema"]["properties"]) == {"account", "container", "prefix", "endpoint"}
    assert set(listed["git"]["config_schema"]["properties"]) == {"url", "ref", "paths", "max_files"}
    assert "blob id" in listed["git"]["change_signal"] and "ETag" in listed["gcs"]["change_signal"]
    assert set(s3["config_schema"]["properties"]) == {"bucket", "prefix", "region"}
    assert s3["config_schema"]["required"] == ["bucket"]
    assert "ETag" in s3["change_signal"]


@pytest.mark.parametrize(("config", "field"), [
    ({"bucket": "docs", "aws_secret_access_key": "wJalrXUtnFEMI"}, "config.aws_secret_access_key"),
    ({"bucket": "docs", "credentials": {"key": "x"}}, "config.credentials"),
    ({"bucket": "docs", "options": {"session-token": "x"}}, "config.options.session-token"),
    ({"bucket": "docs", "prefix": "AKIAIOSFODNN7EXAMPLE"}, "config.prefix"),
])
def test_a_credential_in_the_config_is_refused_naming_its_field(sync_world, config, field):
    w = sync_world
    resp = w.api.post(f"/kb/{w.kb['id']}/sync-sources", json={**body(w), "config": config})
    assert resp.status_code == 422, resp.text
    error = resp.json()["error"]
    assert "a credential does not go in a source's configuration" in error["message"].lower()
    assert list(error["details"]["fields"]) == [field]
    assert "a credential does not go in a source's configuration" in error["details"]["fields"][field].lower()


@pytest.mark.parametrize(("config", "field"), [
    ({"bucket": "No_Such..Bucket"}, "config.bucket"),
    ({}, "config.bucket"),
    ({"bucket": "docs", "region": "the moon"}, "config.region"),
    ({"bucket": "docs", "folder": "x"}, "config.folder"),
])
def test_a_connector_refusal_names_its_field(sync_world, config, field):
    w = sync_world
    resp = w.api.post(f"/kb/{w.kb['id']}/sync-sources", json={**body(w), "config": config})
    assert resp.status_code == 422, resp.text
    assert list(resp.json()["error"]["details"]["fields"]) == [field]


def test_a_source_names_only_a_secret_its_creator_may_lend_of_the_connectors_kind(sync_world, client_for):
    w = sync_world
    url = f"/kb/{w.kb['id']}/sync-sources"
    other_org = make_secret(w.runtime, "someone_else")
    wrong_kind = make_secret(w.runtime, ORG, kind="openai")
    for secret, sentence in ((other_org, "The vault holds no secret with this id that you can use."),
                             ("arn:aws:secretsmanager:us-east-1:123456789012:secret:nothing-here",
                              "The vault holds no secret with this id that you can use."),
                             (wrong_kind, "The secret is not tagged sluice:provider=aws_credentials.")):
        resp = w.api.post(url, json=body(w, secret_id=secret))
        assert resp.status_code == 400, resp.text
        assert resp.json()["error"]["details"]["fields"] == {"secret_id": sentence}
    # no secret: there is no deployment-wide fallback credential
    resp = w.api.post(url, json={**body(w), "secret_id": None})
    assert resp.status_code == 400 and list(resp.json()["error"]["details"]["fields"]) == ["secret_id"]
    # an editor of the base without secrets:view may not lend the organization's secret either
    editor = client_for(f"editor_{uuid.uuid4().hex[:6]}", ORG, ["collections:view", "collections:edit"])
    resp = editor.post(url, json=body(w))
    assert resp.status_code == 400 and resp.json()["error"]["details"]["fields"] == {
        "secret_id": "The vault holds no secret with this id that you can use."}
    assert w.api.post(url, json=body(w)).status_code == 201


def test_schedules_are_rates_no_more_often_than_allowed(sync_world):
    w = sync_world
    url = f"/kb/{w.kb['id']}/sync-sources"
    for schedule in ("cron(0 * * * ? *)", "every day", "rate(1 minute)"):
        resp = w.api.post(url, json=body(w, schedule=schedule))
        assert resp.status_code == 422 and list(resp.json()["error"]["details"]["fields"]) == ["schedule"], schedule
    assert w.api.post(url, json=body(w, schedule="rate(6 hours)")).status_code == 201


def test_a_source_is_its_bases_writers_business(sync_world, client_for):
    w = sync_world
    source = w.source(w.bucket())
    path = f"/kb/{w.kb['id']}/sync-sources/{source['id']}"
    assert w.api.get(path).json() == source
    assert w.api.get(f"/rag/sync/sources/{source['id']}").json() == source
    assert source["id"] in {s["id"] for s in w.api.get(f"/kb/{w.kb['id']}/sync-sources").json()["sources"]}

    absent = w.api.get(f"/kb/{w.kb['id']}/sync-sources/{uuid.uuid4()}")
    assert absent.status_code == 404 and absent.json() == ABSENT
    # the same source through another base the caller writes is absent too
    other = w.new_base("Another")
    elsewhere = w.api.get(f"/kb/{other['id']}/sync-sources/{source['id']}")
    assert (elsewhere.status_code, elsewhere.json()) == (404, ABSENT)
    # a reader of the base, and a stranger, get the absent answer everywhere
    for who in (client_for(f"viewer_{uuid.uuid4().hex[:6]}", ORG, ["collections:view"]),
                client_for(f"stranger_{uuid.uuid4().hex[:6]}", "elsewhere", PERMS)):
        for resp in (who.get(path), who.get(f"/rag/sync/sources/{source['id']}"),
                     who.get(f"/kb/{w.kb['id']}/sync-sources"), who.post(f"{path}/run"),
                     who.patch(path, json={"name": "mine"}), who.delete(path)):
            assert (resp.status_code, resp.json()) == (404, ABSENT)
    assert w.api.get(path).status_code == 200  # still there

    renamed = w.api.patch(path, json={"name": "Renamed", "schedule": "rate(1 day)", "sync_mode": "update_only"})
    assert renamed.status_code == 200
    assert (renamed.json()["name"], renamed.json()["schedule"], renamed.json()["sync_mode"]) == (
        "Renamed", "rate(1 day)", "update_only")
    moved = w.api.patch(path, json={"collection_name": other["collection_name"]})
    assert moved.status_code == 400 and list(moved.json()["error"]["details"]["fields"]) == ["collection_name"]

    assert w.api.delete(path).status_code == 204
    assert w.api.get(path).status_code == 404
    assert [e.action for e in audit(source["id"])] == [
        "sync_source.created", "sync_source.updated", "sync_source.deleted"]


def test_repoint_and_clone_check_the_target_and_are_audited(sync_world, client_for):
    w = sync_world
    source = w.source(w.bucket())
    target = w.new_base("Target")
    foreign = client_for(f"owner_{uuid.uuid4().hex[:6]}", "other_org", PERMS)
    theirs = foreign.post("/kb", json={"name": "Theirs", "scope": "org"}).json()

    refused = w.api.patch(f"/rag/sync/sources/{source['id']}", json={"collection_name": theirs["collection_name"]})
    assert (refused.status_code, refused.json()) == (404, ABSENT)
    moved = w.api.patch(f"/rag/sync/sources/{source['id']}", json={"collection_name": target["collection_name"]})
    assert moved.status_code == 200, moved.text
    assert moved.json()["kb_id"] == target["id"] and moved.json()["collection_name"] == target["collection_name"]
    # the source now belongs to the target: through its old base it is absent
    assert w.api.get(f"/kb/{w.kb['id']}/sync-sources/{source['id']}").status_code == 404

    clone = w.api.post(f"/rag/sync/sources/{source['id']}/clone", json={"kb_id": w.kb["id"], "name": "Copy"})
    assert clone.status_code == 201, clone.text
    copy = clone.json()
    assert copy["kb_id"] == w.kb["id"] and copy["config"] == source["config"] and copy["secret_id"] == w.secret_id
    assert w.api.post(f"/rag/sync/sources/{source['id']}/clone", json={"kb_id": theirs["id"]}).status_code == 404

    trail = audit(source["id"])
    assert [e.action for e in trail] == ["sync_source.created", "sync_source.updated"]
    repointed = trail[1]
    assert (repointed.kb_id, repointed.collection_name) == (uuid.UUID(target["id"]), target["collection_name"])
    assert (repointed.previous_kb_id, repointed.previous_collection_name) == (
        uuid.UUID(w.kb["id"]), w.kb["collection_name"])
    (created,) = audit(copy["id"])
    assert created.action == "sync_source.created" and created.cloned_from == uuid.UUID(source["id"])
    assert created.secret_id == w.secret_id and created.connector == "s3" and created.actor == repointed.actor
    # the trail names no configuration at all
    with transaction() as conn:
        columns = {r["column_name"] for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'sync_audit'").fetchall()}
    assert "config" not in columns and not any("bucket" in c for c in columns)


def test_one_run_at_a_time_and_progress_while_it_goes(sync_world):
    w = sync_world
    kb = w.new_base("Progress")
    bucket = w.bucket()
    for i in range(3):
        w.put(bucket, f"f{i}.md", f"# File {i}\n\nWords about file number {i} for the index.\n".encode())
    source = w.source(bucket, kb=kb)
    listing, fetching = threading.Event(), threading.Event()
    list_go, fetch_go = threading.Event(), threading.Event()

    def hold_list(name: str) -> None:
        if name == bucket:
            listing.set()
            list_go.wait(60)

    def hold_second(key: str) -> None:
        if key == "f1.md":
            fetching.set()
            fetch_go.wait(60)

    w.calls.before_list = hold_list
    try:
        first = w.start(source)
        assert listing.wait(60)
        again = w.api.post(f"/kb/{kb['id']}/sync-sources/{source['id']}/run")
        assert again.status_code == 409, again.text
        assert again.json()["error"]["code"] == "CONFLICT"
        assert again.json()["error"]["details"] == {"run_id": first["id"]}
        busy = w.api.patch(f"/kb/{kb['id']}/sync-sources/{source['id']}", json={"config": {"bucket": "other"}})
        assert busy.status_code == 409 and busy.json()["error"]["details"] == {"run_id": first["id"]}
        assert w.api.delete(f"/kb/{kb['id']}/sync-sources/{source['id']}").status_code == 409
        w.calls.before_get = hold_second
        list_go.set()
        assert fetching.wait(60)
        mid = w.api.get(f"/rag/sync/logs/{first['id']}").json()
        assert mid["status"] == "running"
        assert (mid["counts"]["listed"], mid["counts"]["decided"]) == (3, 1), mid["counts"]
    finally:
        w.calls.before_list = None
        w.calls.before_get = None
        list_go.set()
        fetch_go.set()
    done = w.wait(first["id"])
    assert done["status"] == "succeeded" and done["counts"]["new"] == 3 and done["counts"]["ingested"] == 3
    assert w.run(source)["status"] == "succeeded"  # and the next run is free to start


def test_the_cli_follows_a_run_and_prints_every_file(sync_world, make_token, capsys):
    from sluice.cli import main

    w = sync_world
    kb = w.new_base("Cli")
    bucket = w.bucket()
    w.put(bucket, "a.md", b"# A\n\nAlpha words for the index.\n")
    w.put(bucket, "b.exe", b"MZ not a document")
    source = w.source(bucket, kb=kb)
    token = w.api.headers["Authorization"].removeprefix("Bearer ")
    code = main(["sync", "run", source["id"], "--api", w.runtime.api_url, "--token", token, "--poll", "0.2"])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].split() == ["outcome", "file", "size", "reason"]
    assert any(line.startswith("new") and f"s3://{bucket}/a.md" in line for line in lines)
    assert any(line.startswith("ignored") and f"s3://{bucket}/b.exe" in line and "not supported" in line
               for line in lines)
    assert "succeeded: listed 2, new 1, updated 0, unchanged 0, ignored 1, failed 0, removed 0" in lines[-1]
    assert main(["sync", "run", str(uuid.uuid4()), "--api", w.runtime.api_url, "--token", token]) == 1


def test_the_preview_says_who_will_read_what_a_source_ingests_before_it_exists(sync_world, client_for):
    """R-SYNC-8: the audience sentence, the credential named only to one who may use it, and a create's
    refusals by field; nothing is saved and nothing remote is read."""
    w = sync_world
    url = f"/kb/{w.kb['id']}/sync-sources/preview"
    before = len(w.api.get(f"/kb/{w.kb['id']}/sync-sources").json()["sources"])
    listed = len(w.calls.calls) if hasattr(w.calls, "calls") else None

    resp = w.api.post(url, json=body(w))
    assert resp.status_code == 200, resp.text
    assert resp.json() == {
        "sentence": f"The secret {w.secret_id} can read whatever it has been granted, and everything it ingests "
                    f"becomes searchable in {w.kb['collection_name']} by everyone in the organization {ORG} "
                    "who can view this base.",
        "refusals": {}}
    assert len(w.api.get(f"/kb/{w.kb['id']}/sync-sources").json()["sources"]) == before  # nothing saved
    if listed is not None:
        assert len(w.calls.calls) == listed  # nothing remote read

    # a secret the caller may not use is not named, and a create would refuse it
    foreign = make_secret(w.runtime, "someone_else")
    resp = w.api.post(url, json={**body(w), "secret_id": foreign})
    assert resp.status_code == 200
    assert resp.json()["sentence"].startswith("The source's credential can read whatever")
    assert foreign not in resp.json()["sentence"]
    assert list(resp.json()["refusals"]) == ["secret_id"]

    # a config a create would refuse: by field
    resp = w.api.post(url, json={**body(w), "config": {"bucket": "No_Such..Bucket"}})
    assert resp.status_code == 200 and list(resp.json()["refusals"]) == ["config.bucket"]

    # a personal base: its owner alone
    owner = client_for(f"pat_{uuid.uuid4().hex[:6]}", ORG, PERMS)
    mine = owner.post("/kb", json={"name": "Mine", "scope": "personal"}).json()
    resp = owner.post(f"/kb/{mine['id']}/sync-sources/preview", json={"connector": "s3", "config": {"bucket": "b"}})
    assert resp.status_code == 200
    assert f"by its owner ({mine['owner_id']}) alone." in resp.json()["sentence"]

    # a reader of the base gets what a create would answer them: the absent answer
    reader = client_for(f"viewer_{uuid.uuid4().hex[:6]}", ORG, ["collections:view"])
    resp = reader.post(url, json=body(w))
    assert (resp.status_code, resp.json()) == (404, ABSENT)
