"""Runs of the azure_blob, gcs and git connectors through the local stack, each against a real server:
Azurite, gcp-storage-emulator, and git's http-backend (tests/remote_servers.py). A source is created
through the API, run by the state machine, its files ingested by the ordinary pipeline with the local
model (counted), and searched; a second run changes nothing and fetches nothing."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from sluice.sync.connectors import AzureBlobConnector, Connector, GcsConnector
from sluice.sync.connectors.base import ListedPage
from tests.e2e.sync_support import make_secret

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ORG = f"remoteorg_{uuid.uuid4().hex[:6]}"
PERMS = ["collections:view", "collections:edit", "secrets:view"]


def text(topic: str) -> bytes:
    return (f"The {topic} handbook. Every {topic} request is reviewed by the {topic} desk within two days, "
            f"and the {topic} desk keeps its notes in the shared ledger.\n").encode()


class CountingEmbedder:
    """The pipeline's embedder, counting its batches."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return list(self.inner.embed_documents(texts))


@dataclass
class World:
    runtime: Any
    api: httpx.Client
    embed_calls: Callable[[], int]
    fetched: dict[str, int] = field(default_factory=dict)

    def base(self, name: str) -> dict[str, Any]:
        resp = self.api.post("/kb", json={"name": name, "scope": "org"})
        assert resp.status_code == 201, resp.text
        return dict(resp.json())

    def source(self, kb: dict[str, Any], connector: str, config: dict[str, Any], secret_id: str | None
               ) -> dict[str, Any]:
        body = {"name": f"{connector} source", "connector": connector, "config": config, "secret_id": secret_id}
        resp = self.api.post(f"/kb/{kb['id']}/sync-sources", json=body)
        assert resp.status_code == 201, resp.text
        return dict(resp.json())

    def run(self, source: dict[str, Any], timeout: float = 180) -> dict[str, Any]:
        resp = self.api.post(f"/kb/{source['kb_id']}/sync-sources/{source['id']}/run")
        assert resp.status_code == 202, resp.text
        run_id = resp.json()["id"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.api.get(f"/rag/sync/logs/{run_id}").json()
            if run["status"] not in ("queued", "running"):
                return dict(run)
            time.sleep(0.3)
        raise AssertionError(f"run {run_id} did not finish")

    def outcomes(self, run: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
        page = self.api.get(f"/rag/sync/logs/{run['id']}/files", params={"limit": 200}).json()
        return {f["source_path"]: (f["outcome"], f.get("reason")) for f in page["files"]}

    def documents(self, kb: dict[str, Any]) -> list[dict[str, Any]]:
        return list(self.api.get(f"/kb/{kb['id']}/documents", params={"limit": 200}).json()["documents"])

    def search(self, kb: dict[str, Any], query: str) -> list[dict[str, Any]]:
        resp = self.api.post("/rag/search", json={"query": query, "collections": [kb["collection_name"]],
                                                  "top_k": 3})
        assert resp.status_code == 200, resp.text
        return list(resp.json()["results"])

    def secret(self, kind: str, value: dict[str, str]) -> str:
        return make_secret(self.runtime, ORG, kind=kind, value=value)


@pytest.fixture(scope="module")
def world(runtime, client_for) -> Iterator[World]:
    """An organization editor; the sync tasks may reach loopback (SYNC_ALLOWED_HOSTS), the pipeline's
    embedder counted, each connector's downloads counted."""
    from sluice import wiring
    from sluice.config import reset_settings
    from sluice.sync.connectors import CONNECTORS

    before = os.environ.get("SYNC_ALLOWED_HOSTS")
    os.environ["SYNC_ALLOWED_HOSTS"] = "127.0.0.0/8"
    reset_settings()
    wiring.sync_context.cache_clear()
    stage = wiring.stage_context()
    original_embedder = stage.embedder_for
    counting: dict[str, CountingEmbedder] = {}

    def embedder_for(spec: Any) -> Any:
        key = repr(spec)
        if key not in counting:
            counting[key] = CountingEmbedder(original_embedder(spec))
        return counting[key]

    stage.embedder_for = embedder_for
    w = World(runtime, client_for(f"remote_{uuid.uuid4().hex[:6]}", ORG, PERMS),
              lambda: sum(c.calls for c in counting.values()))
    originals: dict[str, Callable[..., None]] = {}
    for name, cls in CONNECTORS.items():
        originals[name] = cls._fetch

        def counted(self: Connector, *args: Any, _orig: Callable[..., None] = cls._fetch, _name: str = name
                    ) -> None:
            w.fetched[_name] = w.fetched.get(_name, 0) + 1
            _orig(self, *args)

        cls._fetch = counted  # type: ignore[method-assign]
    try:
        yield w
    finally:
        for name, cls in CONNECTORS.items():
            cls._fetch = originals[name]  # type: ignore[method-assign]
        stage.embedder_for = original_embedder
        if before is None:
            os.environ.pop("SYNC_ALLOWED_HOSTS", None)
        else:
            os.environ["SYNC_ALLOWED_HOSTS"] = before
        reset_settings()
        wiring.sync_context.cache_clear()


def counts(run: dict[str, Any]) -> tuple[int, ...]:
    c = run["counts"]
    return c["listed"], c["new"], c["updated"], c["unchanged"], c["failed"], c["removed"]


# --- Azure Blob and GCS: one story, two clients ------------------------------------------------------------

@dataclass
class Store:
    connector: str
    cls: type[Connector]
    config: dict[str, Any]
    secret: tuple[str, dict[str, str]]
    put: Callable[[str, bytes], None]
    delete: Callable[[str], None]
    scheme: str


@pytest.fixture(scope="module", params=["azure_blob", "gcs"])
def store(request) -> Iterator[Store]:
    if request.param == "azure_blob":
        from tests.remote_servers import AZURITE_ACCOUNT, AZURITE_KEY, Azurite

        az = Azurite()
        container = az.service().create_container(f"docs{uuid.uuid4().hex[:8]}")
        yield Store("azure_blob", AzureBlobConnector,
                    {"account": AZURITE_ACCOUNT, "container": container.container_name, "endpoint": az.endpoint},
                    ("azure_storage", {"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY}),
                    lambda k, b: container.upload_blob(k, b, overwrite=True) and None,
                    lambda k: container.delete_blob(k), "azure://" + container.container_name)
        az.close()
    else:
        from tests.remote_servers import GcsEmulator, TokenEndpoint, service_account_key

        gcs, token = GcsEmulator(), TokenEndpoint()
        bucket = gcs.client().create_bucket(f"docs-{uuid.uuid4().hex[:8]}")
        yield Store("gcs", GcsConnector, {"bucket": bucket.name, "endpoint": gcs.endpoint},
                    ("gcp_service_account", service_account_key(token.url)),
                    lambda k, b: bucket.blob(k).upload_from_string(b), lambda k: bucket.blob(k).delete(),
                    "gs://" + bucket.name)
        token.close()
        gcs.close()


def test_an_object_store_source_syncs_then_changes_nothing_then_follows_changes(world, store, monkeypatch):
    w = world
    names = {"handbook/leave.md": "lighthouse", "handbook/travel.md": "caravan", "notes.txt": "orchard",
             "handbook/": None}
    for key, topic in names.items():
        store.put(key, text(topic) if topic else b"")  # "handbook/" is a console's folder marker
    kb = w.base(f"{store.connector} docs")
    source = w.source(kb, store.connector, store.config, w.secret(*store.secret))

    first = w.run(source)
    assert first["status"] == "succeeded" and first["listing_complete"], first
    assert counts(first) == (3, 3, 0, 0, 0, 0)
    assert set(w.outcomes(first)) == {f"{store.scheme}/{k}" for k in names if names[k]}
    hits = w.search(kb, "Who reviews caravan requests?")
    assert any("caravan" in h["content"] for h in hits)

    # unchanged: decided from the ETags, nothing downloaded, nothing embedded
    fetched, embedded = w.fetched.get(store.connector, 0), w.embed_calls()
    second = w.run(source)
    assert second["status"] == "succeeded" and counts(second) == (3, 0, 0, 3, 0, 0)
    assert (w.fetched.get(store.connector, 0), w.embed_calls()) == (fetched, embedded)

    # changed and removed: one download, one removal
    store.put("notes.txt", text("greenhouse"))
    store.delete("handbook/leave.md")
    third = w.run(source)
    assert counts(third) == (2, 0, 1, 1, 0, 1), third
    assert w.fetched[store.connector] == fetched + 1
    assert sorted(d["source_path"] for d in w.documents(kb)) == [f"{store.scheme}/handbook/travel.md",
                                                                   f"{store.scheme}/notes.txt"]

    # a listing that fails part-way is not whole: the file deleted since is not removed
    store.delete("notes.txt")
    real = store.cls._list_page
    calls = {"n": 0}

    def second_page_fails(self: Any, token: str | None) -> Any:
        # the server's first page, said to be followed by another, whose request fails
        calls["n"] += 1
        if calls["n"] == 1:
            return ListedPage(real(self, token).entries, "next-page")
        raise ConnectionError("the page timed out")

    monkeypatch.setattr(store.cls, "_list_page", second_page_fails)
    cut = w.run(source)
    assert cut["listing_complete"] is False and cut["counts"]["removed"] == 0
    assert "stopped part-way" in (cut["error"] or "") and "nothing was removed" in cut["error"]
    assert len(w.documents(kb)) == 2


# --- git -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Iterator[Any]:
    from tests.remote_servers import git_server

    server = git_server(tmp_path_factory.mktemp("git"))
    yield server
    server.close()


def test_a_git_source_syncs_then_answers_nothing_changed_in_one_round_trip(world, repo):
    w = world
    repo.commit({"README.md": text("anchor"), "docs/ops/runbook.md": text("compass"),
                 "docs/faq.md": text("lantern"), "src/main.py": b"print('code is not synced')\n"})
    kb = w.base("git docs")
    secret = w.secret("git_token", {"token": repo.token})
    source = w.source(kb, "git", {"url": repo.url, "ref": "main"}, secret)
    address = f"git+{repo.url}@main:"

    first = w.run(source)
    assert first["status"] == "succeeded" and counts(first) == (3, 3, 0, 0, 0, 0), first
    assert (first["nothing_changed"], first["note"]) == (False, None)
    assert set(w.outcomes(first)) == {address + p for p in ("README.md", "docs/ops/runbook.md", "docs/faq.md")}
    hits = w.search(kb, "Who reviews compass requests?")
    assert any("compass" in h["content"] for h in hits)

    # the ref did not move: one ls-refs, nothing listed, fetched or embedded, nothing removed
    before, fetched, embedded = len(repo.log), w.fetched["git"], w.embed_calls()
    second = w.run(source)
    assert second["status"] == "succeeded" and counts(second) == (0, 0, 0, 0, 0, 0), second
    # the run's view says so, in a field and in words, rather than leaving an empty run to be read
    assert second["nothing_changed"] is True and second["note"].startswith("Nothing changed since the last"), second
    assert [r.command for r in repo.requests_since(before)] == ["ls-refs"]
    assert (w.fetched["git"], w.embed_calls(), len(w.documents(kb))) == (fetched, embedded, 3)

    # a commit changing one file: the tree is read again and that one blob alone is fetched
    repo.commit({"docs/faq.md": text("beacon")})
    before = len(repo.log)
    third = w.run(source)
    assert counts(third) == (3, 0, 1, 2, 0, 0), third
    blob_fetches = [r.wants for r in repo.requests_since(before) if r.command == "fetch"][1:]  # after the trees
    assert blob_fetches == [[repo.blob_id("docs/faq.md")]]
    assert any("beacon" in h["content"] for h in w.search(kb, "beacon desk"))

    # a force-push that drops a file: it is removed
    repo.amend_force_push({"docs/ops/runbook.md": None})
    fourth = w.run(source)
    assert fourth["counts"]["removed"] == 1 and fourth["status"] == "succeeded", fourth
    assert sorted(d["source_path"] for d in w.documents(kb)) == [address + "README.md", address + "docs/faq.md"]
    kept_readme = {d["source_path"]: d["id"] for d in w.documents(kb)}[address + "README.md"]

    # a rename (the same blob at a new path): the document moves to the new address, its chunks kept -
    # the blob is not fetched (the trees are the one fetch) and nothing is embedded again (R-SYNC-3)
    kept = {d["source_path"]: d["id"] for d in w.documents(kb)}[address + "docs/faq.md"]
    faq = (repo.work / "docs" / "faq.md").read_bytes()
    repo.commit({"docs/faq.md": None, "docs/help/faq.md": faq})
    before, fetched, embedded = len(repo.log), w.fetched["git"], w.embed_calls()
    fifth = w.run(source)
    assert fifth["status"] == "succeeded" and counts(fifth) == (2, 0, 0, 2, 0, 0), fifth
    assert (w.fetched["git"], w.embed_calls()) == (fetched, embedded)
    assert [r.command for r in repo.requests_since(before) if r.command == "fetch"] == ["fetch"]  # the trees
    outcome, reason = w.outcomes(fifth)[address + "docs/help/faq.md"]
    assert outcome == "unchanged" and reason is not None and f"Renamed from {address}docs/faq.md" in reason
    assert {d["source_path"]: d["id"] for d in w.documents(kb)} == {address + "README.md": kept_readme,
                                                                    address + "docs/help/faq.md": kept}
    hits = [h for h in w.search(kb, "beacon desk") if "beacon" in h["content"]]
    assert hits and {h["metadata"]["source_path"] for h in hits} == {address + "docs/help/faq.md"}


def test_a_git_source_reports_a_huge_file_and_a_submodule_in_words(world, repo, monkeypatch):
    w = world
    monkeypatch.setenv("MAX_UPLOAD_SIZE_MB", "1")
    from sluice import wiring
    from sluice.config import reset_settings

    reset_settings()
    wiring.sync_context.cache_clear()
    try:
        repo.commit({"docs/big.txt": os.urandom(2 * 1024 * 1024).hex().encode()[:1_500_000]})
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{'b' * 40},docs/vendored.md")
        repo.commit({})
        kb = w.base("git limits")
        source = w.source(kb, "git", {"url": repo.url, "paths": ["docs/**"]},
                          w.secret("git_token", {"token": repo.token}))
        run = w.run(source)
        files = w.outcomes(run)
        outcome, reason = files[f"git+{repo.url}@HEAD:docs/big.txt"]
        assert outcome == "failed" and "larger than the 1 MB limit" in (reason or "")
        outcome, reason = files[f"git+{repo.url}@HEAD:docs/vendored.md"]
        assert outcome == "ignored" and "submodule" in (reason or "")
    finally:
        monkeypatch.delenv("MAX_UPLOAD_SIZE_MB")
        reset_settings()
        wiring.sync_context.cache_clear()


def test_a_git_source_refuses_plain_http_to_a_host_nobody_listed(world, monkeypatch):
    from sluice import wiring
    from sluice.config import reset_settings

    monkeypatch.setenv("SYNC_ALLOWED_HOSTS", "")
    reset_settings()
    wiring.sync_context.cache_clear()
    try:
        kb = world.base("git refused")
        resp = world.api.post(f"/kb/{kb['id']}/sync-sources", json={
            "name": "x", "connector": "git", "config": {"url": "http://127.0.0.1:9/repo.git"}})
        assert resp.status_code == 422, resp.text
        assert "config.url" in json.dumps(resp.json())
    finally:
        monkeypatch.setenv("SYNC_ALLOWED_HOSTS", "127.0.0.0/8")
        reset_settings()
        wiring.sync_context.cache_clear()


def test_a_git_source_may_name_no_secret_and_a_private_repository_then_refuses_it_in_words(world, repo):
    # a public repository needs no credential; this one is private, so the run says so and removes nothing
    kb = world.base("git public")
    source = world.source(kb, "git", {"url": repo.url}, None)
    run = world.run(source)
    assert run["status"] == "failed" and run["listing_complete"] is False, run
    assert "HTTP401" in (run["error"] or "") and "Nothing was removed" in run["error"]
