"""sluice-client's sync sources and runs against the local stack: a run followed to its end with
wait_run, and a run that fails raising with the service's sentence."""

from __future__ import annotations

import pytest

from tests.e2e.client_support import sluice_client
from tests.e2e.sync_support import SyncWorld, sync_world_fixture  # noqa: F401 - the fixture

pytestmark = pytest.mark.e2e


@pytest.fixture
def sluice(sync_world: SyncWorld):
    token = sync_world.api.headers["Authorization"].removeprefix("Bearer ")
    with sluice_client.Sluice(sync_world.runtime.api_url, token=token) as client:
        yield client


def test_a_run_is_started_and_followed_to_succeeded_with_its_files(sync_world: SyncWorld, sluice):
    bucket = sync_world.bucket()
    sync_world.put(bucket, "guide.md", b"# Guide\n\nHow the harbour cranes are inspected every spring.\n")
    source = sluice.create_sync_source(sync_world.kb["id"], f"client {bucket}", "s3",
                                       {"bucket": bucket, "prefix": ""}, secret_id=sync_world.secret_id)
    assert sluice.get_sync_source(sync_world.kb["id"], source.id).connector == "s3"
    run = sluice.start_sync_run(sync_world.kb["id"], source.id)
    assert run.status in ("queued", "running")
    final = sluice.wait_run(run, timeout=180, poll=0.2)
    assert final.status == "succeeded" and (final.counts.listed, final.counts.new) == (1, 1)
    files = sluice.sync_run_files(run.id).files
    assert [(f.outcome, f.name) for f in files] == [("new", "guide.md")]
    assert [r.id for r in sluice.list_sync_runs(sync_world.kb["id"], source.id).runs] == [run.id]


def test_a_run_that_fails_raises_with_the_services_reason(sync_world: SyncWorld, sluice):
    source = sluice.create_sync_source(sync_world.kb["id"], "nowhere", "s3",
                                       {"bucket": "no-such-bucket-for-sluice", "prefix": ""},
                                       secret_id=sync_world.secret_id)
    run = sluice.start_sync_run(sync_world.kb["id"], source.id)
    with pytest.raises(sluice_client.Failed) as failed:
        sluice.wait_run(run, timeout=180, poll=0.2)
    assert failed.value.result.status == "failed"
    assert str(failed.value) == failed.value.result.error == (
        "The source could not be listed (NoSuchBucket): check the source's credential and bucket. "
        "Nothing was removed.")
