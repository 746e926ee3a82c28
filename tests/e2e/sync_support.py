"""What the sync tests share: a moto bucket as the remote side, a secret for it, the run's S3
client wrapped to count GetObject calls and bytes (and to fail a listing on cue), a fake
embedder in place of the pipeline's, and helpers to run a source and read its report."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import httpx
import pytest

from tests.fakes import FakeEmbedder

ORG = f"syncorg_{uuid.uuid4().hex[:6]}"
PERMS = ["collections:view", "collections:edit", "secrets:view"]


@dataclass
class RemoteCalls:
    """What the runs asked of the remote bucket, and failures to serve on cue."""

    get_objects: int = 0
    bytes_read: int = 0
    lists: int = 0
    # list_objects_v2 call numbers (1-based, counted per bucket since ``fail_lists`` was set) to fail
    fail_lists: dict[str, set[int]] = field(default_factory=dict)
    list_counts: dict[str, int] = field(default_factory=dict)
    # a hook run before each GetObject (a test may block it to watch a run mid-way)
    before_get: Callable[[str], None] | None = None
    before_list: Callable[[str], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def snapshot(self) -> tuple[int, int]:
        with self.lock:
            return self.get_objects, self.bytes_read


class _CountingBody:
    def __init__(self, body: Any, calls: RemoteCalls) -> None:
        self._body, self._calls = body, calls

    def read(self, *args: Any) -> bytes:
        data: bytes = self._body.read(*args)
        with self._calls.lock:
            self._calls.bytes_read += len(data)
        return data

    def close(self) -> None:
        self._body.close()


class CountingS3:
    """The run's S3 client, counting what it fetches and failing listings where told to."""

    def __init__(self, client: Any, calls: RemoteCalls) -> None:
        self._client, self._calls = client, calls

    def list_objects_v2(self, **kwargs: Any) -> Any:
        bucket = kwargs["Bucket"]
        if self._calls.before_list is not None:
            self._calls.before_list(bucket)
        with self._calls.lock:
            self._calls.lists += 1
            n = self._calls.list_counts[bucket] = self._calls.list_counts.get(bucket, 0) + 1
            fail = n in self._calls.fail_lists.get(bucket, set())
        if fail:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "InternalError", "Message": f"page of {bucket} at example.internal"}},
                              "ListObjectsV2")
        return self._client.list_objects_v2(**kwargs)

    def get_object(self, **kwargs: Any) -> Any:
        if self._calls.before_get is not None:
            self._calls.before_get(kwargs["Key"])
        with self._calls.lock:
            self._calls.get_objects += 1
        resp = self._client.get_object(**kwargs)
        resp["Body"] = _CountingBody(resp["Body"], self._calls)
        return resp

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


@dataclass
class SyncWorld:
    runtime: Any
    api: httpx.Client
    kb: dict[str, Any]
    secret_id: str
    calls: RemoteCalls
    embedder: FakeEmbedder
    s3: Any

    def new_base(self, name: str = "Synced") -> dict[str, Any]:
        resp = self.api.post("/kb", json={"name": name, "scope": "org"})
        assert resp.status_code == 201, resp.text
        return dict(resp.json())

    def bucket(self, name: str | None = None) -> str:
        bucket = name or f"remote-{uuid.uuid4().hex[:10]}"
        self.s3.create_bucket(Bucket=bucket)
        return bucket

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self.s3.put_object(Bucket=bucket, Key=key, Body=body)

    def source(self, bucket: str, *, prefix: str = "", kb: dict[str, Any] | None = None, **extra: Any
               ) -> dict[str, Any]:
        kb = kb or self.kb
        body = {"name": f"src {bucket}", "connector": "s3", "config": {"bucket": bucket, "prefix": prefix},
                "secret_id": self.secret_id, **extra}
        resp = self.api.post(f"/kb/{kb['id']}/sync-sources", json=body)
        assert resp.status_code == 201, resp.text
        return dict(resp.json())

    def start(self, source: dict[str, Any]) -> dict[str, Any]:
        resp = self.api.post(f"/kb/{source['kb_id']}/sync-sources/{source['id']}/run")
        assert resp.status_code == 202, resp.text
        return dict(resp.json())

    def wait(self, run_id: str, timeout: float = 180) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.api.get(f"/rag/sync/logs/{run_id}").json()
            if run["status"] not in ("queued", "running"):
                return dict(run)
            time.sleep(0.3)
        raise AssertionError(f"run {run_id} did not finish: {run}")

    def run(self, source: dict[str, Any]) -> dict[str, Any]:
        return self.wait(self.start(source)["id"])

    def files(self, run_id: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            page = self.api.get(f"/rag/sync/logs/{run_id}/files", params={"offset": offset, "limit": 100}).json()
            out += page["files"]
            offset = page["next_offset"]
        return out

    def outcomes(self, run_id: str) -> dict[str, str]:
        """source_path → outcome, for the files of a run."""
        return {f["source_path"]: f["outcome"] for f in self.files(run_id)}

    def documents(self, kb: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        kb = kb or self.kb
        page = self.api.get(f"/kb/{kb['id']}/documents", params={"limit": 200}).json()
        return list(page["documents"])


def make_secret(runtime: Any, org: str, kind: str = "aws_credentials", value: dict[str, str] | None = None) -> str:
    sm = boto3.client("secretsmanager", endpoint_url=runtime.moto_url, region_name="us-east-1")
    created = sm.create_secret(
        Name=f"sync-{uuid.uuid4().hex[:8]}",
        SecretString=json.dumps(value or {"access_key_id": "testing", "secret_access_key": "testing"}),
        Tags=[{"Key": "sluice:provider", "Value": kind}, {"Key": "sluice:org_id", "Value": org}])
    return str(created["ARN"])


@pytest.fixture(scope="module", name="sync_world")
def sync_world_fixture(runtime, client_for) -> Iterator[SyncWorld]:
    """An organization editor with a base and a secret, the pipeline embedding with a fake, and
    the runs' S3 clients counted."""
    from sluice import wiring

    api = client_for(f"syncer_{uuid.uuid4().hex[:6]}", ORG, PERMS)
    resp = api.post("/kb", json={"name": "Synced", "scope": "org"})
    assert resp.status_code == 201, resp.text
    embedder = FakeEmbedder()
    stage = wiring.stage_context()
    original_embedder = stage.embedder_for
    stage.embedder_for = lambda spec: embedder
    calls = RemoteCalls()
    opener = wiring.sync_context().connectors
    original_factory = opener.client_factory

    def counted(service: str, region: str | None, keys: Any) -> Any:
        client = original_factory(service, region, keys)
        return CountingS3(client, calls) if service == "s3" else client

    opener.client_factory = counted
    try:
        yield SyncWorld(runtime, api, resp.json(), make_secret(runtime, ORG), calls, embedder,
                        boto3.client("s3", endpoint_url=runtime.moto_url, region_name="us-east-1"))
    finally:
        opener.client_factory = original_factory
        stage.embedder_for = original_embedder
