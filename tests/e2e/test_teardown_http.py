"""Teardowns through the local stack (SPEC §11): the delete routes answer 202, the template's state
machine runs on moto's interpreter with its tasks in our handlers, the receipt tells the state and
what was removed (and the log says the same), a failed step keeps the reservation until the hourly
sweep — fired with its clock moved forward — completes it, a finished execution run again changes
nothing, and ``sluice drop`` goes through the same teardown."""

from __future__ import annotations

import importlib
import json
import logging
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import httpx
import psycopg
import pytest
from psycopg.rows import dict_row

from tests.e2e.test_upload_to_search import search, wait_done

pytestmark = pytest.mark.e2e
RUN = uuid.uuid4().hex[:6]
EDIT = ["collections:view", "collections:edit"]
ABSENT = {"error": {"code": "NOT_FOUND", "message": "Collection not found", "details": {}}}


def receipt_when(api: httpx.Client, teardown_id: str, states: tuple[str, ...] = ("done", "failed"),
                 timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        resp = api.get(f"/rag/teardowns/{teardown_id}")
        assert resp.status_code == 200, resp.text
        body = resp.json()
        if body["state"] in states:
            return body
        time.sleep(0.2)
    raise AssertionError(f"teardown {teardown_id} not {states}: {body}")


def upload(api: httpx.Client, kb_id: str, name: str, content: str) -> dict[str, Any]:
    resp = api.post(f"/kb/{kb_id}/documents", files={"file": (name, content.encode(), "text/plain")})
    assert resp.status_code == 202, resp.text
    doc = wait_done(api, resp.json()["id"])
    assert doc["status"] == "done", doc
    return doc


def new_base(api: httpx.Client, **body: Any) -> dict[str, Any]:
    resp = api.post("/kb", json={"name": f"Teardown {uuid.uuid4().hex[:6]}", **body})
    assert resp.status_code == 201, resp.text
    return resp.json()


def db(runtime) -> psycopg.Connection:
    return psycopg.connect(runtime.database_url, row_factory=dict_row, autocommit=True)


def bucket_keys(runtime, prefix: str = "") -> dict[str, int]:
    s3 = boto3.client("s3", endpoint_url=runtime.moto_url, region_name="us-east-1")
    found: dict[str, int] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=runtime.bucket, Prefix=prefix):
        found.update({o["Key"]: o["Size"] for o in page.get("Contents", [])})
    return found


def keys_of(runtime, docs: list[dict[str, Any]]) -> dict[str, int]:
    ids = [d["id"] for d in docs]
    paths = {d["storage_path"] for d in docs}
    return {k: v for k, v in bucket_keys(runtime).items() if k in paths or any(i in k for i in ids)}


def test_deleting_a_base_runs_the_workflow_to_a_receipt_that_the_log_repeats(runtime, client_for, caplog):
    caplog.set_level(logging.INFO, logger="sluice.teardown")
    api = client_for(f"tess_{RUN}")
    kb = new_base(api)
    docs = [upload(api, kb["id"], f"note{i}.txt", f"Teardown note {i}: the rotation key {i} lives in vault {i}.")
            for i in range(2)]
    before = keys_of(runtime, docs)
    with db(runtime) as conn:
        chunks = conn.execute(f"SELECT count(*) AS n FROM rag_{kb['collection_name']}").fetchone()["n"]
    assert chunks > 0 and len(before) >= 8

    resp = api.delete(f"/kb/{kb['id']}")

    assert resp.status_code == 202, resp.text
    accepted = resp.json()
    assert accepted["state"] == "running" and accepted["collection_name"] == kb["collection_name"]
    assert accepted["knowledge_bases"] == [{"id": kb["id"], "name": kb["name"], "scope": "personal",
                                            "action": "deleted"}]
    assert accepted["removed"]["documents"] == 2 and accepted["table"] == "drop"
    assert api.get(f"/kb/{kb['id']}").status_code == 404  # the rows went in the request
    done = receipt_when(api, accepted["id"])
    assert done["state"] == "done", done
    assert done["removed"] == {"documents": 2, "chunks": chunks, "objects": len(before),
                               "bytes": sum(before.values()), "sync_sources": 0}
    assert done["left"] == {"documents": 0, "chunks": 0, "documents_with_objects": 0, "sync_sources": 0}
    assert done["error"] is None and done["table_dropped"] is True and done["finished_at"]
    assert keys_of(runtime, docs) == {}
    with db(runtime) as conn:
        row = conn.execute("SELECT execution_arn, released_at FROM collection_teardowns WHERE id = %s",
                           (accepted["id"],)).fetchone()
        assert conn.execute("SELECT to_regclass(%s) AS t", (f"rag_{kb['collection_name']}",)).fetchone()["t"] is None
    sfn = boto3.client("stepfunctions", endpoint_url=runtime.moto_url, region_name="us-east-1")
    assert sfn.describe_execution(executionArn=row["execution_arn"])["status"] == "SUCCEEDED"
    assert row["released_at"] is not None

    logged = [r.receipt for r in caplog.records if getattr(r, "receipt", None) and r.receipt["id"] == done["id"]]
    assert logged and logged[-1] == done  # the same receipt, in the structured log

    # the name is free again
    again = api.post("/kb", json={"name": "Again", "collection_name": kb["collection_name"]})
    assert again.status_code == 201, again.text


def test_running_a_finished_execution_again_changes_nothing_and_ends_done(runtime, client_for):
    api = client_for(f"rita_{RUN}")
    kb = new_base(api)
    upload(api, kb["id"], "once.txt", "Run once: the archive is sealed on Fridays.")
    td = api.delete(f"/kb/{kb['id']}").json()
    done = receipt_when(api, td["id"])
    assert done["state"] == "done"
    # meanwhile the name was claimed again and written to: a rerun must leave that alone
    fresh = new_base(api, collection_name=kb["collection_name"])
    kept = upload(api, fresh["id"], "after.txt", "Written after the teardown finished.")

    sfn = boto3.client("stepfunctions", endpoint_url=runtime.moto_url, region_name="us-east-1")
    arn = sfn.start_execution(stateMachineArn=runtime.state_machine_arns["TeardownStateMachine"],
                              name=f"rerun-{td['id']}", input=json.dumps({"teardown_id": td["id"]}))["executionArn"]
    deadline = time.monotonic() + 60
    while (status := sfn.describe_execution(executionArn=arn)["status"]) == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.2)

    assert status == "SUCCEEDED"
    assert api.get(f"/rag/teardowns/{td['id']}").json() == done
    assert any("sealed" not in r["content"] and "Written after" in r["content"]
               for r in search(api, kb["collection_name"], "Written after the teardown finished."))
    assert wait_done(api, kept["id"])["status"] == "done"


def test_a_teardown_failing_at_the_drop_keeps_the_name_until_the_sweep_completes_it(runtime, client_for,
                                                                                       monkeypatch):
    from sluice.config import reset_settings

    monkeypatch.setenv("TEARDOWN_LOCK_TIMEOUT_SECONDS", "0.3")
    reset_settings()
    try:
        api = client_for(f"fay_{RUN}", f"fails_{RUN}", EDIT)
        kb = new_base(api, scope="org")
        upload(api, kb["id"], "held.txt", "A long report query holds this table while the base is deleted.")
        table = f"rag_{kb['collection_name']}"
        holder = psycopg.connect(runtime.database_url)
        holder.execute(f"LOCK TABLE {table} IN ACCESS SHARE MODE")  # a long query on the table, still running

        td = api.delete(f"/kb/{kb['id']}").json()
        failed = receipt_when(api, td["id"])

        assert failed["state"] == "failed", failed
        assert failed["error"]["step"] == "chunks" and "LockNotAvailable" in failed["error"]["reason"]
        assert "sweep" in failed["error"]["reason"]
        claim = api.post("/kb", json={"name": "Too soon", "collection_name": kb["collection_name"], "scope": "org"})
        assert claim.status_code == 409 and "torn down" in claim.json()["error"]["message"]
        holder.rollback()
        holder.close()

        sweep = importlib.import_module("sluice.teardown.sweep")
        runtime.scheduler.fire("TeardownSweepFunction")  # within the hour: nothing to do yet
        assert api.get(f"/rag/teardowns/{td['id']}").json()["state"] == "failed"
        later = datetime.now(UTC) + timedelta(hours=2)
        monkeypatch.setattr(sweep, "clock", lambda: later)
        runtime.scheduler.fire("TeardownSweepFunction")

        done = receipt_when(api, td["id"])
        assert done["state"] == "done" and done["error"] is None and done["attempts"] == 2
        events = [e["event"] for e in done["history"]]
        assert events.index("failed") < events.index("restarted") < events.index("done")
        failure = next(e for e in done["history"] if e["event"] == "failed")
        assert failure["step"] == "chunks"
        assert done["removed"]["chunks"] > 0 and done["table_dropped"] is True
        claim = api.post("/kb", json={"name": "Now", "collection_name": kb["collection_name"], "scope": "org"})
        assert claim.status_code == 201, claim.text
    finally:
        monkeypatch.delenv("TEARDOWN_LOCK_TIMEOUT_SECONDS")
        reset_settings()


def test_who_may_delete_a_base_or_a_collection_and_read_its_receipt(runtime, client_for):
    org, other = f"acme_td_{RUN}", f"globex_td_{RUN}"
    ann = client_for(f"ann_td_{RUN}", org, EDIT)
    vic = client_for(f"vic_td_{RUN}", org, ["collections:view"])
    gus = client_for(f"gus_td_{RUN}", other, EDIT)
    root = client_for(f"root_td_{RUN}", None, [], True)
    a_org = new_base(ann, scope="org")
    a_granted = new_base(ann, scope="org")
    assert ann.post(f"/kb/{a_granted['id']}/grants", json={"user_id": f"vic_td_{RUN}", "permission": "edit"}
                    ).status_code == 201
    app_base = new_base(root, scope="app")

    # reading is not writing, another organization is absent, and the admin flag opens no org base
    for who, kb in ((vic, a_org), (gus, a_org), (root, a_org), (ann, app_base), (gus, app_base)):
        for path in (f"/kb/{kb['id']}", f"/rag/collections/{kb['collection_name']}"):
            resp = who.delete(path)
            assert resp.status_code == 404 and resp.json() == ABSENT, (path, resp.text)

    by_grant = vic.delete(f"/kb/{a_granted['id']}")
    assert by_grant.status_code == 202, by_grant.text
    by_admin = root.delete(f"/rag/collections/{app_base['collection_name']}")
    assert by_admin.status_code == 202, by_admin.text
    by_editor = ann.delete(f"/rag/collections/{a_org['collection_name']}")
    assert by_editor.status_code == 202, by_editor.text

    receipt = by_grant.json()["id"]
    assert receipt_when(vic, receipt)["state"] == "done"  # its requester
    assert ann.get(f"/rag/teardowns/{receipt}").status_code == 200  # a writer of the base it removed
    for who in (gus, root):
        resp = who.get(f"/rag/teardowns/{receipt}")
        assert resp.status_code == 404 and resp.json() == ABSENT
    absent = ann.get(f"/rag/teardowns/{uuid.uuid4()}")
    assert absent.status_code == 404 and absent.json() == ABSENT
    for resp, who in ((by_admin, root), (by_editor, ann)):
        assert receipt_when(who, resp.json()["id"])["state"] == "done"


def test_a_create_on_a_name_a_write_holds_is_409_with_retry_after(runtime, client_for):
    api = client_for(f"wren_{RUN}")
    kb = new_base(api)
    with db(runtime) as conn, conn.transaction():
        from sluice.db import name_locks

        name_locks.hold_for_write(conn, kb["collection_name"])
        started = time.monotonic()
        resp = api.post("/kb", json={"name": "Busy", "collection_name": kb["collection_name"]})
        waited = time.monotonic() - started
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "CONFLICT", resp.text
    assert int(resp.headers["Retry-After"]) >= 1 and waited >= 0.9
    assert api.post("/kb", json={"name": "Free", "collection_name": kb["collection_name"]}).status_code == 201


def test_sluice_drop_goes_through_the_same_teardown_and_follows_it_to_the_receipt(runtime, client_for, capsys):
    from sluice import cli

    api = client_for(f"otto_{RUN}")
    kb = new_base(api)
    upload(api, kb["id"], "operator.txt", "The operator drops this collection from the command line.")
    assert cli.main(["collections", "--json"]) == 0
    listed = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert listed[kb["collection_name"]]["knowledge_bases"][0]["id"] == kb["id"]

    assert cli.main(["drop", kb["collection_name"], "--yes", "--json"]) == 0

    out = json.loads(capsys.readouterr().out)
    assert out["state"] == "done" and out["requested_by"] == "operator"
    assert out["knowledge_bases"][0]["id"] == kb["id"] and out["removed"]["documents"] == 1
    assert out["history"][1]["event"] == "started" and out["history"][1]["execution"].startswith("teardown-")
    assert api.get(f"/rag/teardowns/{out['id']}").json() == out  # the owner of the base reads it too
    assert cli.main(["collections", "--json"]) == 0
    assert kb["collection_name"] not in {c["name"] for c in json.loads(capsys.readouterr().out)}
    assert cli.main(["drop", kb["collection_name"], "--yes"]) == 1  # nothing left to drop
    assert "No collection" in capsys.readouterr().err
