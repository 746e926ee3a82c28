"""Source sync runs through the local runtime (R-SYNC-2..4): the state machine of template.yaml
on moto's interpreter, a moto bucket as the remote side, the ordinary pipeline with a fake
embedder whose calls are counted, and the runs' GetObject calls counted at their S3 client."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from sluice.errors import EmbeddingAuthenticationError
from sluice.sync.connectors import S3Connector
from tests.e2e.sync_support import SyncWorld, sync_world_fixture  # noqa: F401 - the fixture

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def text(topic: str, n: int = 3) -> bytes:
    return "\n\n".join(f"Paragraph {i} on {topic}: the {topic} team reviews item {i} every quarter and keeps "
                       f"notes about {topic} number {i}." for i in range(n)).encode()


def addresses(w: SyncWorld, kb: dict) -> list[str]:
    return sorted(d["source_path"] for d in w.documents(kb))


def started_run(w: SyncWorld, history: str, count: int, timeout: float = 30) -> dict:
    """The source's latest run, once its history holds ``count`` runs (a queued start is delivered by a pump)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = w.api.get(history).json()
        if page["total"] >= count:
            assert page["total"] == count, page
            return dict(page["runs"][0])
        time.sleep(0.2)
    raise AssertionError(f"no run {count} was started: {page}")


def test_seven_scheduled_runs_of_an_unchanged_bucket_index_each_document_once(sync_world):
    w = sync_world
    kb = w.new_base("Nightly")
    bucket = w.bucket()
    keys = ["handbook/leave.md", "handbook/travel.md", "policies/security.txt", "notes.md"]
    for key in keys:
        w.put(bucket, key, text(key.split("/")[-1].split(".")[0]))
    source = w.source(bucket, kb=kb, schedule="rate(1 day)")
    created = datetime.now(UTC)
    runs, embeds, fetched = [], [], []
    history = f"/kb/{kb['id']}/sync-sources/{source['id']}/logs"
    for day in range(1, 8):
        # what EventBridge hands the scheduled function, a day later each time: it hands the run out
        queued = w.runtime.invoke("SyncScheduleFunction", {
            "source": "aws.scheduler", "detail-type": "Scheduled Event",
            "time": (created + timedelta(days=day, minutes=1)).isoformat()})["queued"]
        assert queued.count(source["id"]) == 1, queued
        # and the queue's message, delivered to the same function, starts it
        runs.append(w.wait(started_run(w, history, day)["id"]))
        embeds.append(w.embedder.calls)
        fetched.append(w.calls.snapshot())

    first, rest = runs[0], runs[1:]
    assert first["status"] == "succeeded" and first["trigger"] == "schedule"
    assert first["counts"]["new"] == 4 and first["counts"]["ingested"] == 4
    for run in rest:
        assert run["status"] == "succeeded" and run["trigger"] == "schedule", run
        counts = run["counts"]
        # the skipped count is the files left alone, all of them, every night
        assert (counts["listed"], counts["unchanged"], counts["skipped"]) == (4, 4, 4), counts
        assert (counts["new"], counts["updated"], counts["failed"], counts["removed"]) == (0, 0, 0, 0), counts
    # after the first run: not one embedding, not one GetObject, not one byte
    assert len(set(embeds)) == 1 and len(set(fetched)) == 1, (embeds, fetched)
    assert all(outcome == "unchanged" for outcome in w.outcomes(runs[-1]["id"]).values())
    assert addresses(w, kb) == sorted(f"s3://{bucket}/{k}" for k in keys)  # each document once
    assert all(d["status"] == "done" and d["source"] == "sync" for d in w.documents(kb))
    history = w.api.get(history, params={"limit": 5}).json()
    assert history["total"] == 7 and len(history["runs"]) == 5 and history["next_offset"] == 5
    assert history["runs"][0]["id"] == runs[-1]["id"]


def test_the_templates_scheduler_starts_a_due_run_and_not_one_that_is_not_due(sync_world):
    from sluice.db.connection import transaction

    w = sync_world
    (due,) = w.runtime.template.functions["SyncScheduleFunction"].schedules
    assert due.expression == "rate(5 minutes)"
    events = w.runtime.template.raw["Resources"]["SyncScheduleFunction"]["Properties"]["Events"]
    assert events["Due"]["Type"] == "ScheduleV2"  # EventBridge Scheduler
    kb = w.new_base("Scheduled")
    bucket = w.bucket()
    w.put(bucket, "a.md", text("scheduled"))
    source = w.source(bucket, kb=kb, schedule="rate(30 minutes)")
    history = f"/kb/{kb['id']}/sync-sources/{source['id']}/logs"
    w.runtime.scheduler.fire("SyncScheduleFunction")  # created just now: not due yet
    assert w.api.get(history).json()["total"] == 0
    with transaction() as conn:  # as if the source had been created an hour ago
        conn.execute("UPDATE sync_sources SET created_at = now() - interval '1 hour' WHERE id = %s",
                     (source["id"],))
    w.runtime.scheduler.fire("SyncScheduleFunction")
    run = started_run(w, history, 1)  # handed out on the template's SyncDueQueue, started by its consumer
    assert run["trigger"] == "schedule"
    assert w.runtime.template.function_for_queue("SyncDueQueue").name == "SyncScheduleFunction"
    assert w.wait(run["id"])["counts"]["new"] == 1
    w.runtime.scheduler.fire("SyncScheduleFunction")  # it has just run: not due for another half hour
    time.sleep(2)  # what a queued start would have taken
    assert w.api.get(history).json()["total"] == 1


def test_files_of_one_name_in_two_folders_are_two_documents(sync_world):
    w = sync_world
    kb = w.new_base("Folders")
    bucket = w.bucket()
    same = text("onboarding")
    w.put(bucket, "a/readme.md", same)
    w.put(bucket, "b/readme.md", same)
    w.put(bucket, "c/notes.md", text("billing"))
    w.put(bucket, "d/notes.md", text("payroll"))
    run = w.run(w.source(bucket, kb=kb))
    assert run["status"] == "succeeded" and run["counts"]["new"] == 4, run
    expected = sorted(f"s3://{bucket}/{k}" for k in ("a/readme.md", "b/readme.md", "c/notes.md", "d/notes.md"))
    assert addresses(w, kb) == expected
    docs = {d["source_path"]: d for d in w.documents(kb)}
    # equal contents are still two documents, each under its own address
    assert docs[expected[0]]["content_hash"] == docs[expected[1]]["content_hash"]
    assert docs[expected[0]]["id"] != docs[expected[1]]["id"]
    assert {d["filename"] for d in docs.values()} == {"readme.md", "notes.md"}
    # and a second run finds each under its own address: nothing replaced, nothing added
    again = w.run(w.api.get(f"/rag/sync/sources/{run['source_id']}").json())
    assert again["counts"]["unchanged"] == 4 and addresses(w, kb) == expected


def test_the_modes_mean_what_they_say_through_a_whole_run(sync_world):
    w = sync_world
    kb = w.new_base("Modes")
    bucket = w.bucket()
    w.put(bucket, "kept.md", text("kept"))
    w.put(bucket, "edited.md", text("edited"))
    source = w.source(bucket, kb=kb)
    assert w.run(source)["counts"]["new"] == 2
    first = {d["source_path"]: d["id"] for d in w.documents(kb)}
    edited, kept, fresh = (f"s3://{bucket}/{k}" for k in ("edited.md", "kept.md", "fresh.md"))

    # update_only: the changed file replaces its document, the unchanged one is skipped, a new one ignored
    w.put(bucket, "edited.md", text("edited again", 4))
    w.put(bucket, "fresh.md", text("fresh"))
    path = f"/kb/{kb['id']}/sync-sources/{source['id']}"
    assert w.api.patch(path, json={"sync_mode": "update_only"}).status_code == 200
    before_gets = w.calls.snapshot()[0]
    run = w.run(source)
    assert w.outcomes(run["id"]) == {edited: "updated", kept: "unchanged", fresh: "ignored"}
    assert w.calls.snapshot()[0] == before_gets + 1  # the new file was ignored without a download
    (ignored,) = [f for f in w.files(run["id"]) if f["source_path"] == fresh]
    assert ignored["reason"] == "New files are not added in update_only mode."
    second = {d["source_path"]: d["id"] for d in w.documents(kb)}
    assert set(second) == {edited, kept} and second[kept] == first[kept] and second[edited] != first[edited]

    # new_only: the new file is added, the rest left alone
    assert w.api.patch(path, json={"sync_mode": "new_only"}).status_code == 200
    run = w.run(source)
    assert w.outcomes(run["id"]) == {edited: "unchanged", kept: "unchanged", fresh: "new"}
    third = {d["source_path"]: d["id"] for d in w.documents(kb)}
    assert {p: third[p] for p in (edited, kept)} == {p: second[p] for p in (edited, kept)}

    # full: every listed file is ingested again, each replacing its own document, none duplicated
    assert w.api.patch(path, json={"sync_mode": "full"}).status_code == 200
    embeds = w.embedder.calls
    run = w.run(source)
    assert w.outcomes(run["id"]) == {edited: "updated", kept: "updated", fresh: "updated"}
    assert w.embedder.calls > embeds
    fourth = {d["source_path"]: d["id"] for d in w.documents(kb)}
    assert len(w.documents(kb)) == 3 and not set(fourth.values()) & set(third.values())


def test_a_listing_that_fails_part_way_or_on_its_first_page_removes_nothing(sync_world, monkeypatch):
    w = sync_world
    monkeypatch.setattr(S3Connector, "PAGE_SIZE", 2)
    kb = w.new_base("Flaky listing")
    bucket = w.bucket()
    keys = [f"k{i}.md" for i in range(5)]
    for key in keys:
        w.put(bucket, key, text(key))
    source = w.source(bucket, kb=kb)
    assert w.run(source)["counts"]["new"] == 5
    for key in keys[3:]:  # a whole listing would now remove these two
        w.s3.delete_object(Bucket=bucket, Key=key)

    w.calls.list_counts[bucket] = 0
    w.calls.fail_lists[bucket] = {2}  # the second page fails
    part = w.run(source)
    assert part["status"] == "failed" and part["listing_complete"] is False, part
    assert "stopped part-way" in part["error"] and "nothing was removed" in part["error"]
    assert "example.internal" not in part["error"] and bucket not in part["error"]  # the client's own text stays out
    assert part["counts"]["listed"] == 2 and part["counts"]["removed"] == 0
    assert len(w.documents(kb)) == 5

    w.calls.list_counts[bucket] = 0
    w.calls.fail_lists[bucket] = {1}  # the first page fails: an empty listing that is not "everything was deleted"
    empty = w.run(source)
    assert empty["status"] == "failed" and empty["listing_complete"] is False, empty
    assert "could not be listed (InternalError)" in empty["error"] and "Nothing was removed" in empty["error"]
    assert empty["counts"]["listed"] == 0 and empty["counts"]["removed"] == 0
    assert len(w.documents(kb)) == 5

    w.calls.fail_lists[bucket] = set()
    whole = w.run(source)
    assert whole["status"] == "succeeded" and whole["listing_complete"] is True
    assert whole["counts"]["removed"] == 2
    outcomes = w.outcomes(whole["id"])
    assert {p for p, o in outcomes.items() if o == "removed"} == {f"s3://{bucket}/{k}" for k in keys[3:]}
    assert addresses(w, kb) == sorted(f"s3://{bucket}/{k}" for k in keys[:3])


def test_a_document_two_sources_claim_goes_only_when_neither_lists_it(sync_world):
    w = sync_world
    kb = w.new_base("Two sources")
    bucket = w.bucket()
    w.put(bucket, "shared/terms.md", text("terms"))
    w.put(bucket, "own/faq.md", text("faq"))
    whole = w.source(bucket, kb=kb)
    part = w.source(bucket, kb=kb, prefix="shared/")
    assert w.run(whole)["counts"]["new"] == 2
    before = w.calls.snapshot()
    second = w.run(part)
    # the second source finds the document at the same address with the same signal: claimed, not fetched
    assert second["counts"]["unchanged"] == 1 and second["counts"]["new"] == 0
    assert w.calls.snapshot() == before
    terms = f"s3://{bucket}/shared/terms.md"

    moved = w.api.patch(f"/kb/{kb['id']}/sync-sources/{part['id']}",
                        json={"config": {"bucket": bucket, "prefix": "elsewhere/"}})
    assert moved.status_code == 200, moved.text
    stopped = w.run(part)
    assert stopped["status"] == "succeeded" and stopped["counts"]["listed"] == 0
    assert stopped["counts"]["removed"] == 0
    assert terms in addresses(w, kb)  # the other source still lists it

    w.api.patch(f"/kb/{kb['id']}/sync-sources/{whole['id']}", json={"config": {"bucket": bucket, "prefix": "own/"}})
    last = w.run(whole)
    assert last["counts"]["removed"] == 1 and last["counts"]["unchanged"] == 1
    assert addresses(w, kb) == [f"s3://{bucket}/own/faq.md"]  # neither lists it now


def test_remote_names_are_labels(sync_world):
    w = sync_world
    kb = w.new_base("Hostile names")
    bucket = w.bucket()
    w.put(bucket, "../../escape.md", text("escape"))
    w.put(bucket, "..", b"dot dot")
    w.put(bucket, ".", b"dot")
    w.put(bucket, "folder/", b"")  # a directory marker
    w.put(bucket, "notes/", b"a key ending in a separator, with bytes")
    run = w.run(w.source(bucket, kb=kb))
    assert run["status"] == "succeeded", run
    files = {f["source_path"]: f for f in w.files(run["id"])}
    assert f"s3://{bucket}/folder/" not in files  # the marker is no file
    escape = files[f"s3://{bucket}/../../escape.md"]
    assert escape["outcome"] == "new" and escape["name"] == "escape.md"
    for key, shown in (("..", ".."), (".", "."), ("notes/", "/")):
        refused = files[f"s3://{bucket}/{key}"]
        assert refused["outcome"] == "failed", refused
        assert refused["reason"] == f"The key ends in '{shown}', which is not a file name; the file was not synced."
    (doc,) = w.documents(kb)
    assert doc["filename"] == "escape.md" and doc["source_path"] == f"s3://{bucket}/../../escape.md"
    collection = kb["collection_name"]
    assert doc["storage_path"].startswith(f"rag/{collection}/") and doc["storage_path"].endswith("_escape.md")
    assert "/../" not in doc["storage_path"]
    head = w.s3.head_object(Bucket=w.runtime.bucket, Key=doc["storage_path"])
    assert head["ServerSideEncryption"] == "aws:kms" and head["SSEKMSKeyId"] == w.runtime.key_arn


def test_an_archive_that_is_no_longer_listed_takes_its_members_along(sync_world):
    import io
    import zipfile

    w = sync_world
    kb = w.new_base("Archives")
    bucket = w.bucket()
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as z:
        z.writestr("a.md", text("alpha"))
        z.writestr("b.md", text("beta"))
    w.put(bucket, "pack.zip", packed.getvalue())
    w.put(bucket, "loose.md", text("loose"))
    source = w.source(bucket, kb=kb)
    assert w.run(source)["counts"]["new"] == 2
    pack = f"s3://{bucket}/pack.zip"
    assert addresses(w, kb) == sorted([pack, f"{pack}!/a.md", f"{pack}!/b.md", f"s3://{bucket}/loose.md"])
    w.s3.delete_object(Bucket=bucket, Key="pack.zip")
    run = w.run(source)
    assert run["counts"]["removed"] == 1 and w.outcomes(run["id"])[pack] == "removed"
    assert addresses(w, kb) == [f"s3://{bucket}/loose.md"]


def _refuse(batch: int) -> None:
    raise EmbeddingAuthenticationError("local", "all-MiniLM-L6-v2")


def test_a_provider_refusing_between_insert_and_delete_keeps_the_old_version(sync_world):
    w = sync_world
    kb = w.new_base("Refusals")
    bucket = w.bucket()
    guide = f"s3://{bucket}/guide.md"
    w.put(bucket, "guide.md", b"# Guide\n\nThe first edition says the vault opens at nine in the morning.\n")
    w.put(bucket, "other.md", text("unrelated"))  # a file that never fails, beside the one that does
    source = w.source(bucket, kb=kb)
    assert w.run(source)["counts"]["new"] == 2

    def guide_docs() -> list[dict]:
        return [d for d in w.documents(kb) if d["source_path"] == guide]

    (v1,) = guide_docs()

    w.put(bucket, "guide.md", b"# Guide\n\nThe second edition says the vault opens at ten in the morning.\n")
    w.embedder.before_batch = _refuse
    try:
        failed = w.run(source)
    finally:
        w.embedder.before_batch = None
    assert failed["status"] == "succeeded" and failed["counts"]["failed"] == 1, failed
    assert failed["counts"]["unchanged"] == 1, failed
    row = {f["source_path"]: f for f in w.files(failed["id"])}[guide]
    assert row["outcome"] == "failed"
    assert row["reason"].startswith("The document could not be indexed (AuthenticationError)")
    docs = {d["id"]: d for d in guide_docs()}
    assert docs[v1["id"]]["status"] == "done"  # the old version is still whole
    diagnostic = w.api.post("/rag/search/diagnostic", json={"query": "when does the vault open",
                                                             "collections": [kb["collection_name"]]}).json()
    assert any("first edition" in c["content"] for c in diagnostic["candidates"])
    assert not any("second edition" in c["content"] for c in diagnostic["candidates"])

    # unchanged since it failed: not fetched, not embedded, and reported as still failed
    before_gets, before_embeds = w.calls.snapshot(), w.embedder.calls
    carried = w.run(source)
    row = {f["source_path"]: f for f in w.files(carried["id"])}[guide]
    assert row["outcome"] == "failed" and row["reason"].startswith("Unchanged since it failed: The document could")
    assert w.calls.snapshot() == before_gets and w.embedder.calls == before_embeds

    # retry-failed fetches exactly the failed file, regardless, and the new version replaces the old one
    retry = w.api.post(f"/rag/sync/logs/{carried['id']}/retry-failed")
    assert retry.status_code == 202, retry.text
    assert retry.json()["trigger"] == "retry" and retry.json()["retry_of"] == carried["id"]
    retried = w.wait(retry.json()["id"])
    assert retried["status"] == "succeeded" and retried["counts"]["updated"] == 1, retried
    assert w.outcomes(retried["id"]) == {guide: "updated"}  # other.md is not looked at, nor removed
    assert retried["counts"]["removed"] == 0
    assert w.calls.snapshot()[0] == before_gets[0] + 1
    (current,) = guide_docs()
    assert current["id"] != v1["id"] and current["status"] == "done"
    assert len(w.documents(kb)) == 2
    nothing = w.api.post(f"/rag/sync/logs/{retried['id']}/retry-failed")
    assert nothing.status_code == 400 and nothing.json()["error"]["details"]["fields"] == {
        "run_id": "The run failed no file."}

    # a file that fails and then changes is fetched again by the next ordinary run
    w.put(bucket, "guide.md", b"# Guide\n\nThe third edition says the vault opens at eleven.\n")
    w.embedder.before_batch = _refuse
    try:
        assert w.run(source)["counts"]["failed"] == 1
    finally:
        w.embedder.before_batch = None
    w.put(bucket, "guide.md", b"# Guide\n\nThe fourth edition says the vault opens at noon.\n")
    changed = w.run(source)
    assert changed["counts"]["updated"] == 1 and changed["counts"]["failed"] == 0, changed
    (latest,) = guide_docs()
    assert latest["status"] == "done" and latest["id"] not in (v1["id"], current["id"])


def test_the_run_is_the_templates_state_machine_on_the_interpreter(sync_world):
    w = sync_world
    definition_uri = w.runtime.template.state_machines["SyncStateMachine"].definition_uri
    assert definition_uri == "infra/statemachines/sync.asl.json"
    kb = w.new_base("Interpreter")
    bucket = w.bucket()
    w.put(bucket, "one.md", text("one"))
    run = w.run(w.source(bucket, kb=kb))
    sfn = boto3.client("stepfunctions", endpoint_url=w.runtime.moto_url, region_name="us-east-1")
    machine = w.runtime.state_machine_arns["SyncStateMachine"]
    described = sfn.describe_state_machine(stateMachineArn=machine)
    on_disk = json.loads((w.runtime.root / definition_uri).read_text())
    assert json.loads(described["definition"])["States"].keys() == on_disk["States"].keys()
    execution = machine.replace(":stateMachine:", ":execution:") + f":run-{run['id']}"
    assert sfn.describe_execution(executionArn=execution)["status"] == "SUCCEEDED"
    entered = [e["stateEnteredEventDetails"]["name"]
               for e in sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]
               if "stateEnteredEventDetails" in e]
    for state in ("List", "Files", "Batch", "AwaitIngestion", "StillIndexing", "Reconcile", "Finish"):
        assert state in entered, entered
    assert entered.index("List") < entered.index("Files") < entered.index("Reconcile") < entered.index("Finish")
