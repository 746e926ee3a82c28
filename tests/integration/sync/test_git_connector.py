"""The git connector against a real smart-HTTP server: git's own ``http-backend`` on loopback, behind a
shim that requires a token and logs every request (tests/remote_servers.py). What a run of the sync
machinery does with these listings (decide by blob id, fetch only changed files, remove) is in
tests/e2e/test_sync_git.py; here, what the connector asks of the server and what it answers."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sluice.config import SyncContextSettings
from sluice.sync.connectors import CONNECTORS, RemoteListing
from sluice.sync.connectors.git import LFS_NOTE, SUBMODULE_NOTE, SYMLINK_NOTE, GitConnector, glob_regex, read_token
from sluice.sync.outbound import NOT_HTTPS
from tests.remote_servers import GitServer, git_server

LOOPBACK = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": "127.0.0.0/8"})
NOBODY = SyncContextSettings.model_validate({"SYNC_ALLOWED_HOSTS": ""})


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GitServer]:
    s = git_server(tmp_path)
    yield s
    s.close()


def opened(server: GitServer, state: dict | None = None, token: str | None = None, **config) -> GitConnector:
    cfg = GitConnector.parse_config({"url": server.url, **config})
    assert GitConnector.check(cfg, LOOPBACK) is None
    secret = json.dumps({"token": server.token}) if token is None else token
    return GitConnector.open(cfg, secret, external_id="x", settings=LOOPBACK, client_factory=None,
                             state=state or {})


def listed(listing: RemoteListing) -> dict[str, str | None]:
    return {f.key: f.etag for f in listing.files}


DOCS = {"README.md": b"# Readme\n", "docs/guide/install.md": b"Install with make.\n", "docs/notes.txt": b"notes\n",
        "src/app.py": b"print('not documentation')\n", "package.json": b"{}", "docs/data.csv": b"a,b\n"}


def test_the_listing_is_the_tree_at_the_ref_with_blob_ids_and_no_file_contents(server):
    commit = server.commit(DOCS)
    listing = opened(server).list_files()
    assert listing.complete and not listing.unchanged and listing.state == {"commit": commit}
    assert listed(listing) == {p: server.blob_id(p) for p in ("README.md", "docs/guide/install.md", "docs/notes.txt")}
    f = next(f for f in listing.files if f.key == "docs/guide/install.md")
    assert f.source_path == f"git+{server.url}@HEAD:docs/guide/install.md"
    # ls-refs, the capability advertisement, and one fetch of the commit alone: no blob was wanted
    fetches = [r for r in server.log if r.command == "fetch"]
    assert [r.wants for r in fetches] == [[commit]]
    assert [r.command or "info/refs" for r in server.log] == ["ls-refs", "info/refs", "fetch"]
    assert fetches[0].sent < 1500  # a commit and three trees


def test_an_unchanged_ref_is_one_round_trip_that_says_nothing_changed(server):
    commit = server.commit(DOCS)
    first = opened(server).list_files()
    before = len(server.log)
    again = opened(server, state=first.state).list_files()
    assert again.unchanged and again.complete and again.files == [] and again.state == {"commit": commit}
    assert [(r.method, r.command) for r in server.requests_since(before)] == [("POST", "ls-refs")]


def test_a_commit_lists_the_new_blob_id_of_the_changed_file_only(server):
    server.commit(DOCS)
    first = listed(opened(server).list_files())
    server.commit({"docs/notes.txt": b"notes, revised\n"})
    second = listed(opened(server, state={"commit": "0" * 40}).list_files())
    assert {k for k in first if first[k] != second.get(k)} == {"docs/notes.txt"}


def test_a_force_push_removing_a_file_lists_without_it(server):
    server.commit(DOCS)
    server.commit({"docs/extra.md": b"extra\n"})
    assert "docs/extra.md" in listed(opened(server).list_files())
    rewritten = server.amend_force_push({"docs/extra.md": None})
    listing = opened(server, state={"commit": "f" * 40}).list_files()
    assert listing.complete and "docs/extra.md" not in listed(listing) and listing.state == {"commit": rewritten}


def test_fetch_wants_the_one_blob_and_writes_its_bytes(server, tmp_path):
    server.commit(DOCS)
    conn = opened(server)
    f = next(f for f in conn.list_files().files if f.key == "docs/guide/install.md")
    before = len(server.log)
    path = conn.fetch(f, tmp_path, 1000)
    assert path.name == "install.md" and path.read_bytes() == DOCS["docs/guide/install.md"]
    assert [r.wants for r in server.requests_since(before)] == [[f.etag]]


def test_a_huge_file_is_refused_from_its_header_without_its_bytes(server, tmp_path):
    big = os.urandom(3 * 1024 * 1024)  # incompressible: the pack carries every byte
    server.commit({"docs/huge.pdf": big, "README.md": b"x"})
    conn = opened(server)
    f = next(f for f in conn.list_files().files if f.key == "docs/huge.pdf")
    received = conn.remote.transfer.received
    path = conn.fetch(f, tmp_path, 1024 * 1024)
    # one byte over the limit is how a fetch says "too large" (the run reports the limit in words);
    # the file on disk is sparse, and the client stopped reading after the pack's object header
    assert path.stat().st_size == 1024 * 1024 + 1 and path.read_bytes()[:16] == b"\0" * 16
    assert conn.remote.transfer.received - received < 300 * 1024


def test_submodules_symlinks_and_lfs_files_are_reported_not_followed(server):
    server.commit({**DOCS, ".gitattributes": b"*.pdf filter=lfs diff=lfs merge=lfs -text\n",
                   "docs/manual.pdf": b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 9\n"})
    server.git("update-index", "--add", "--cacheinfo", f"160000,{'a' * 40},vendor/lib")
    os.symlink("../README.md", server.work / "docs" / "link.md")
    server.git("add", "docs/link.md")
    server.commit({})
    files = {f.key: f for f in opened(server).list_files().files}
    assert files["vendor/lib"].note == SUBMODULE_NOTE and files["vendor/lib"].etag == f"submodule:{'a' * 40}"
    assert files["docs/link.md"].note == SYMLINK_NOTE
    assert files["docs/manual.pdf"].note == LFS_NOTE
    assert files["README.md"].note is None


def test_paths_and_max_files_bound_the_listing_and_a_cut_listing_is_not_whole(server):
    server.commit({f"docs/page{i:02}.md": f"page {i}\n".encode() for i in range(12)} | {"other/x.md": b"x"})
    only_docs = opened(server, paths=["docs/**"]).list_files()
    assert len(only_docs.files) == 12 and only_docs.complete
    cut = opened(server, paths=["docs/*.md"], max_files=5).list_files()
    assert len(cut.files) == 5 and not cut.complete and cut.state is None
    assert "cut at 5 files" in (cut.problem or "") and "nothing was removed" in (cut.problem or "")
    # the run's own ceiling (SYNC_MAX_KEYS_PER_RUN) cuts the same way
    assert not opened(server).list_files(limit=3).complete


def test_a_wrong_token_or_ref_is_a_listing_that_removes_nothing(server):
    server.commit(DOCS)
    refused = opened(server, token="not-the-token").list_files()
    assert not refused.complete and refused.files == [] and "HTTP401" in (refused.problem or "")
    assert "Nothing was removed" in (refused.problem or "")
    missing = opened(server, ref="no-such-branch").list_files()
    assert not missing.complete and "'no-such-branch'" in (missing.problem or "")


def test_a_tag_or_a_commit_id_is_a_ref(server):
    first = server.commit(DOCS)
    server.git("tag", "-a", "v1", "-m", "release")
    server.git("push", "--quiet", str(server.bare), "v1")
    server.commit({"docs/notes.txt": b"later\n"})
    tagged = opened(server, ref="v1").list_files()
    assert tagged.state == {"commit": first}  # the annotated tag peeled to its commit
    pinned = opened(server, ref=first, state={"commit": first}).list_files()
    assert pinned.unchanged  # a commit id never moves: not even ls-refs is asked


def test_a_server_without_partial_clone_is_refused_in_words(tmp_path):
    s = git_server(tmp_path, allow_filter=False)
    try:
        s.commit(DOCS)
        listing = opened(s).list_files()
        assert not listing.complete and "NoPartialClone" in (listing.problem or "")
        assert not any(r.command == "fetch" for r in s.log)  # nothing was downloaded
    finally:
        s.close()


def test_config_refusals_name_their_field():
    def refused(config: dict, settings: SyncContextSettings = LOOPBACK) -> tuple[str | None, str]:
        r = GitConnector.validate_config(config, settings)
        assert r is not None, config
        return r.field, r.message

    assert refused({"url": "http://127.0.0.1:9/repo.git"}, NOBODY)[0] == "url"
    # a public address, over plain http
    assert refused({"url": "http://93.184.215.14/repo.git"}, NOBODY) == ("url", NOT_HTTPS)
    assert refused({"url": "https://93.184.215.14/r.git", "ref": "a..b"})[0] == "ref"
    assert refused({"url": "https://93.184.215.14/r.git", "paths": ["/abs/*.md"]})[0] == "paths"
    assert refused({"url": "https://93.184.215.14/r.git", "paths": ["*" * 9]})[0] == "paths"
    assert refused({"url": "https://93.184.215.14/r.git", "max_files": 0})[0] == "max_files"
    assert refused({"url": "https://93.184.215.14/r.git", "token": "x"})[0] == "token"
    assert GitConnector.validate_config({"url": "http://127.0.0.1:9/repo.git"}, LOOPBACK) is None
    assert "git" in CONNECTORS and CONNECTORS["git"].SECRET_KIND == "git_token"


def test_globs_and_tokens():
    docs = glob_regex(["**/*.md", "docs/*.txt"])
    assert docs.fullmatch("README.md") and docs.fullmatch("a/b/c.md") and docs.fullmatch("docs/x.txt")
    assert not docs.fullmatch("docs/sub/x.txt") and not docs.fullmatch("a.mdx")
    assert read_token("ghp_abc") == ("x-access-token", "ghp_abc")
    assert read_token(json.dumps({"token": "t", "username": "oauth2"})) == ("oauth2", "t")
    with pytest.raises(Exception, match="not a token"):
        read_token("two words")


def test_a_listed_blob_id_names_its_content_and_a_submodules_commit_does_not(server):
    # what lets a run move a renamed file's document without fetching it (tasks: Connector.content_id)
    server.commit(DOCS)
    files = {f.key: f for f in opened(server).list_files().files}
    blob = files["README.md"].etag
    assert blob == server.blob_id("README.md") and GitConnector.content_id(blob) == blob
    assert GitConnector.content_id(f"submodule:{blob}") is None and GitConnector.content_id(None) is None


def test_the_blob_fetch_checks_the_bytes_are_the_blob_asked_for(server):
    server.commit(DOCS)
    conn = opened(server)
    out = io.BytesIO()
    assert conn.remote.fetch_blob(server.blob_id("README.md"), out, 100) == len(DOCS["README.md"])
    assert out.getvalue() == DOCS["README.md"]


def test_throttling_and_a_bad_moment_are_tried_again_through_the_retry_policy(server):
    server.commit(DOCS)
    server.busy += [429, 503]  # Retry-After: 0
    listing = opened(server).list_files()
    assert listing.complete and len(listing.files) == 3
    assert [r.status for r in server.log[:3]] == [429, 503, 200]
    server.busy += [503] * 4  # a server that stays down: the listing says so, and removes nothing
    down = opened(server).list_files()
    assert not down.complete and "HTTP503" in (down.problem or "")
