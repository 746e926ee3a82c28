"""What a sync may read, through the local stack (issue 26, findings 1 and 2).

A source never reads the deployment's own bucket: another user's private chat file under
``chat/<their id>/`` must not become searchable in a writer's base, whether the source is created,
changed, cloned or repointed now, or was written before the rule (its run fails, in words, and lists
nothing). A source's secret is its base's tenant's: a repoint is checked as a create or a clone is
(``secrets:view`` and the secret's tags), and a run whose secret no longer belongs to its base's tenant
fails with a sentence and reads nothing. Running and scheduling a source take write access to its
current base.
"""

from __future__ import annotations

import time
import uuid

import boto3
import pytest

from sluice.db import sync_sources as repo
from sluice.db.connection import transaction
from sluice.db.sync_sources import SyncSource
from tests.e2e.sync_support import ORG, SyncWorld, make_secret, sync_world_fixture  # noqa: F401 - the fixture

pytestmark = pytest.mark.e2e

ABSENT = {"error": {"code": "NOT_FOUND", "message": "Collection not found", "details": {}}}
OWN_BUCKET = "This is a bucket of this deployment; a source never reads it."
UNKNOWN_SECRET = "The vault holds no secret with this id that you can use."
# The planted fact: one word nothing else in any base holds.
SECRET_WORD = "quibblefrost"
PRIVATE_NOTE = (f"My private note: the combination of the safe is {SECRET_WORD} 4417, and nobody else "
                "should ever read this.\n").encode()


@pytest.fixture(scope="module")
def victims_chat_file(sync_world, client_for):
    """Another user's private chat file, stored under chat/<their id>/ in the deployment's bucket."""
    w = sync_world
    victim = f"victim_{uuid.uuid4().hex[:6]}"
    resp = client_for(victim).post("/files/upload", files={"file": ("safe.txt", PRIVATE_NOTE)})
    assert resp.status_code == 201, resp.text
    keys = [o["Key"] for o in w.s3.list_objects_v2(Bucket=w.runtime.bucket, Prefix=f"chat/{victim}/")
            .get("Contents", [])]
    assert len(keys) == 1, keys
    return w.runtime.bucket, f"chat/{victim}/"


def found(w: SyncWorld, kb: dict, query: str) -> list[str]:
    resp = w.api.post("/rag/search/diagnostic", json={"query": query, "collections": [kb["collection_name"]]})
    assert resp.status_code == 200, resp.text
    return [c["content"] for c in resp.json()["candidates"]]


def listed(w: SyncWorld, bucket: str) -> int:
    with w.calls.lock:
        return w.calls.list_counts.get(bucket, 0)


def wait_as(api, run_id: str, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = api.get(f"/rag/sync/logs/{run_id}")
        assert run.status_code == 200, run.text
        if run.json()["status"] not in ("queued", "running"):
            return dict(run.json())
        time.sleep(0.3)
    raise AssertionError(f"run {run_id} did not finish")


def write_directly(kb: dict, config: dict, secret_id: str | None, **extra) -> dict:
    """A source row as one written before the rules it breaks: no check between it and the table."""
    with transaction() as conn:
        source = repo.insert(conn, SyncSource(
            id=uuid.uuid4(), kb_id=uuid.UUID(kb["id"]), name="written before the fix", connector="s3",
            config=config, secret_id=secret_id, sync_mode="new_only", organizational_unit=None,
            schedule=extra.get("schedule"), created_by="earlier"))
    return {"id": str(source.id), "kb_id": kb["id"]}


def test_a_source_on_the_deployments_own_bucket_is_refused_at_create_change_clone_and_repoint(
        sync_world, victims_chat_file):
    w = sync_world
    bucket, prefix = victims_chat_file
    kb = w.new_base("Own bucket refused")
    url = f"/kb/{kb['id']}/sync-sources"
    for config in ({"bucket": bucket, "prefix": prefix}, {"bucket": bucket, "prefix": "rag/"}, {"bucket": bucket}):
        resp = w.api.post(url, json={"name": "Theirs", "connector": "s3", "config": config,
                                     "secret_id": w.secret_id})
        assert resp.status_code == 422, resp.text
        assert resp.json()["error"]["message"] == "The connector refused the configuration"
        assert resp.json()["error"]["details"]["fields"] == {"config.bucket": OWN_BUCKET}

    legit = w.source(w.bucket(), kb=kb)
    changed = w.api.patch(f"{url}/{legit['id']}", json={"config": {"bucket": bucket, "prefix": prefix}})
    assert changed.status_code == 422, changed.text
    assert changed.json()["error"]["details"]["fields"] == {"config.bucket": OWN_BUCKET}
    assert w.api.get(f"{url}/{legit['id']}").json()["config"] == legit["config"]

    # a row written before the rule is not carried anywhere either
    earlier = write_directly(kb, {"bucket": bucket, "prefix": prefix}, w.secret_id)
    other = w.new_base("Elsewhere")
    for resp in (w.api.post(f"/rag/sync/sources/{earlier['id']}/clone", json={"kb_id": other["id"]}),
                 w.api.patch(f"/rag/sync/sources/{earlier['id']}", json={"collection_name": other["collection_name"]})):
        assert resp.status_code == 422, resp.text
        assert resp.json()["error"]["details"]["fields"] == {"config.bucket": OWN_BUCKET}
    assert w.api.get(f"/kb/{other['id']}/sync-sources").json()["sources"] == []
    assert listed(w, bucket) == 0
    assert not any(SECRET_WORD in c for c in found(w, kb, f"safe combination {SECRET_WORD}"))


def test_a_source_written_before_the_rule_fails_its_run_without_listing_the_deployments_bucket(
        sync_world, victims_chat_file):
    w = sync_world
    bucket, prefix = victims_chat_file
    kb = w.new_base("Written before")
    # the control: what a legitimate source brings is searchable in this base
    remote = w.bucket()
    w.put(remote, "combination.md", b"The lobby safe's combination is kept by facilities, ask zarnwhistle.\n")
    assert w.run(w.source(remote, kb=kb))["status"] == "succeeded"
    assert any("zarnwhistle" in c for c in found(w, kb, "zarnwhistle safe combination"))

    earlier = write_directly(kb, {"bucket": bucket, "prefix": prefix}, w.secret_id)
    run = w.run(earlier)
    assert run["status"] == "failed", run
    assert run["error"] == OWN_BUCKET + " Nothing was read; correct config.bucket and run again."
    assert run["counts"]["listed"] == 0 and w.files(run["id"]) == []
    assert listed(w, bucket) == 0
    assert all(d["source_path"].startswith(f"s3://{remote}/") for d in w.documents(kb))
    assert not any(SECRET_WORD in c for c in found(w, kb, f"safe combination {SECRET_WORD}"))


def test_repointing_checks_the_secret_as_create_and_clone_do(sync_world, client_for):
    w = sync_world
    remote = w.bucket()
    w.put(remote, "plan.md", b"The organization's plan for the year.\n")
    source = w.source(remote)
    member_id = f"member_{uuid.uuid4().hex[:6]}"
    # a writer of the organization's bases without secrets:view: refused that secret by create and clone
    member = client_for(member_id, ORG, ["collections:view", "collections:edit"])
    mine = member.post("/kb", json={"name": "Mine", "scope": "personal"})
    assert mine.status_code == 201, mine.text
    mine = mine.json()
    created = member.post(f"/kb/{mine['id']}/sync-sources", json={
        "name": "x", "connector": "s3", "config": {"bucket": remote}, "secret_id": w.secret_id})
    assert created.json()["error"]["details"]["fields"] == {"secret_id": UNKNOWN_SECRET}
    cloned = member.post(f"/rag/sync/sources/{source['id']}/clone", json={"kb_id": mine["id"]})
    assert cloned.json()["error"]["details"]["fields"] == {"secret_id": UNKNOWN_SECRET}

    moved = member.patch(f"/rag/sync/sources/{source['id']}", json={"collection_name": mine["collection_name"]})
    assert moved.status_code == 400, moved.text
    assert moved.json()["error"]["details"]["fields"] == {"secret_id": UNKNOWN_SECRET}
    assert w.api.get(f"/rag/sync/sources/{source['id']}").json()["kb_id"] == w.kb["id"]
    assert member.get(f"/kb/{mine['id']}/sync-sources").json()["sources"] == []

    # with secrets:view, an organization's secret still feeds only the organization's bases
    viewer = client_for(member_id, ORG, ["collections:view", "collections:edit", "secrets:view"])
    moved = viewer.patch(f"/rag/sync/sources/{source['id']}", json={"collection_name": mine["collection_name"]})
    assert moved.status_code == 400, moved.text
    assert list(moved.json()["error"]["details"]["fields"]) == ["secret_id"]
    assert "sluice:owner" in moved.json()["error"]["details"]["fields"]["secret_id"]

    # the same member with a token of another organization reaches the source nowhere
    abroad = client_for(member_id, "another_org", ["collections:view", "collections:edit", "secrets:view"])
    path = f"/kb/{w.kb['id']}/sync-sources/{source['id']}"
    done = w.run(source)
    assert done["status"] == "succeeded", done
    for resp in (abroad.post(f"{path}/run"), abroad.patch(path, json={"schedule": "rate(1 day)"}),
                 abroad.post(f"/rag/sync/logs/{done['id']}/retry-failed"),
                 abroad.patch(f"/rag/sync/sources/{source['id']}", json={"collection_name": mine["collection_name"]})):
        assert (resp.status_code, resp.json()) == (404, ABSENT)
    assert w.api.get(path).json()["schedule"] is None


def test_a_run_whose_secret_is_not_its_bases_tenants_fails_and_reads_nothing(sync_world, client_for):
    w = sync_world
    remote = w.bucket()
    w.put(remote, "plan.md", b"The organization's plan for the year, in the words of flumbergast.\n")
    owner = client_for(f"mover_{uuid.uuid4().hex[:6]}", ORG, ["collections:view", "collections:edit"])
    mine = owner.post("/kb", json={"name": "Moved into", "scope": "personal"}).json()
    # a source moved into a personal base before repoints were checked: its run uses nothing of the org's
    moved = write_directly(mine, {"bucket": remote, "prefix": ""}, w.secret_id, schedule="rate(1 day)")
    run = owner.post(f"/kb/{mine['id']}/sync-sources/{moved['id']}/run")
    assert run.status_code == 202, run.text
    run = wait_as(owner, run.json()["id"])
    assert run["status"] == "failed", run
    assert run["error"] == ("The source's secret does not belong to its base's tenant (a personal base reads "
                            "with its owner's own secret, tagged sluice:owner); nothing was read.")
    assert run["counts"]["listed"] == 0 and listed(w, remote) == 0
    assert owner.get(f"/kb/{mine['id']}/documents").json()["documents"] == []

    # an organization base's secret re-tagged away from the organization: its next run fails the same way
    secret = make_secret(w.runtime, ORG)
    kb = w.new_base("Re-tagged")
    source = w.source(remote, kb=kb, secret_id=secret)
    sm = boto3.client("secretsmanager", endpoint_url=w.runtime.moto_url, region_name="us-east-1")
    sm.tag_resource(SecretId=secret, Tags=[{"Key": "sluice:org_id", "Value": "someone_else"}])
    run = w.run(source)
    assert run["status"] == "failed", run
    assert run["error"] == ("The source's secret does not belong to its base's tenant (an organization base reads "
                            "with a secret tagged with its sluice:org_id); nothing was read.")
    assert listed(w, remote) == 0 and w.documents(kb) == []
