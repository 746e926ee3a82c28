"""A git repository's files at a ref (R-SYNC-7): the tree is the listing, the blob id the change signal.

A run asks the server what the ref points at (``ls-refs``, one round trip). When that is the
commit the last successful run kept, the run is over: "nothing changed", nothing listed, nothing
removed. Otherwise it fetches the commit and its trees without file contents (a partial clone's
``filter blob:none`` at depth 1) and lists the files its ``paths`` globs match, each with its
blob id; a file whose blob id its document already carries is decided unchanged before any of
its bytes is fetched, and a changed file is fetched alone, by blob id, within the size limit.

A file's address is ``git+<url>@<ref>:<path>``. A rename is a removal and an addition with the same
blob id, which names the content (``content_id``): the run moves the document to the new address,
its chunks kept, and fetches and embeds nothing (R-SYNC-3's content match, decided from the tree).
Submodules, symbolic links and Git LFS files are reported, not followed. A private repository's
token is the source's ``git_token`` secret, sent only to the repository's own origin (no redirect is
followed). Every request goes through the guarded client: a public address, or one the operator
lists in ``SyncAllowedHosts``; https, or plain http only to a listed host.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sluice.config import SyncContextSettings
from sluice.ingest.families import kb_extensions
from sluice.sync.connectors.base import ConfigRefusal, Connector, RemoteFile, RemoteListing, SourceRefused
from sluice.sync.outbound import (
    NOT_REACHABLE,
    EndpointNotAllowed,
    guarded_client,
    sync_policy,
    url_problem_for_source,
)

SECRET_KIND = "git_token"  # noqa: S105 - the kind of secret, not one
_COMMIT = re.compile(r"[0-9a-f]{40}")
_REF_BAD = re.compile(r"(\.\.|@\{|//|^[-/.]|[/.]$|\.lock$|/\.)")
_REF_CHARS = re.compile(r"[A-Za-z0-9._/+-]+")
MAX_GLOB_WILDCARDS = 8
LFS_NOTE = ("A Git LFS file (.gitattributes filter=lfs): the repository holds a pointer, and LFS content is not "
            "followed.")
SUBMODULE_NOTE = ("A git submodule: submodules are not followed; add its repository as a source of its own to sync "
                  "its files.")
SYMLINK_NOTE = "A symbolic link: links are not followed."
MAX_ATTRIBUTES = 64 * 1024


# Kinds Sluice reads that in a repository are data, configuration or build output rather than
# documentation (package.json, a pom.xml, fixtures, release archives): synced only when paths names them.
NOT_DOCUMENTATION = frozenset({".json", ".xml", ".csv", ".zip", ".tgz", ".tar.gz", ".xlf", ".xliff", ".msg"})


def default_paths() -> list[str]:
    """The documentation kinds Sluice reads (Markdown, text, HTML, PDF, Office and OpenDocument files),
    anywhere in the repository."""
    return [f"**/*{ext}" for ext in kb_extensions() if ext not in NOT_DOCUMENTATION]


class GitConfig(BaseModel):
    """Which repository, at which ref, and which of its files. Never a credential: that is secret_id."""

    model_config = ConfigDict(extra="forbid", title="Git repository")

    url: str = Field(max_length=2048, description="The repository's https URL, as `git clone` takes it.")
    ref: str | None = Field(None, max_length=255, description="A branch, a tag or a full commit id (default: the "
                                                              "repository's default branch).")
    paths: list[str] = Field(default_factory=default_paths, min_length=1, max_length=50,
                             description="Globs of the files to sync (`**` for any folders), e.g. docs/**/*.md.")
    max_files: int = Field(5000, ge=1, le=100_000, description="The most files one run lists.")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if "?" in value or "#" in value:
            raise ValueError("A repository URL carries no query or fragment")
        return value.rstrip("/")

    @field_validator("ref")
    @classmethod
    def _ref(cls, value: str | None) -> str | None:
        if value is not None and (not _REF_CHARS.fullmatch(value) or _REF_BAD.search(value)):
            raise ValueError("A ref is a branch, a tag or a full commit id (letters, digits, . _ / + -)")
        return value

    @field_validator("paths")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        for glob in value:
            if not glob or len(glob) > 256 or any(ord(ch) < 32 for ch in glob) or glob.startswith("/"):
                raise ValueError("A path glob is 1-256 characters, relative to the repository's root")
            if sum(glob.count(ch) for ch in "*?[") > MAX_GLOB_WILDCARDS:
                raise ValueError(f"A path glob holds at most {MAX_GLOB_WILDCARDS} wildcards")
        return value


def glob_regex(globs: list[str]) -> re.Pattern[str]:
    """One expression for the globs: ``**/`` any folders (or none), ``*`` and ``?`` within a name."""
    def one(glob: str) -> str:
        out, i = "", 0
        while i < len(glob):
            if glob.startswith("**/", i):
                out, i = out + "(?:[^/]*/)*", i + 3
            elif glob.startswith("**", i):
                out, i = out + ".*", i + 2
            elif glob[i] == "*":
                out, i = out + "[^/]*", i + 1
            elif glob[i] == "?":
                out, i = out + "[^/]", i + 1
            else:
                out, i = out + re.escape(glob[i]), i + 1
        return out
    return re.compile("|".join(f"(?:{one(g)})" for g in globs))


def tree_entries(raw: bytes) -> Iterator[tuple[bytes, int, str]]:
    """A tree object's entries: (name, mode, object id in hex); ``<mode> <name>\\0<20-byte id>`` each."""
    i = 0
    while i < len(raw):
        space = raw.index(b" ", i)
        nul = raw.index(b"\0", space)
        if nul + 21 > len(raw):
            raise ValueError("a truncated tree entry")
        yield raw[space + 1:nul], int(raw[i:space], 8), raw[nul + 1:nul + 21].hex()
        i = nul + 21


def read_token(secret: str) -> tuple[str, str]:
    """A git_token secret: the token alone, or ``{"token", "username"?}`` (HTTP Basic; the user name a
    host expects with a token, ``x-access-token`` by default, which GitHub takes)."""
    text = secret.strip()
    username = "x-access-token"
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict) or not isinstance(value.get("token"), str) or not value["token"]:
            raise SourceRefused("The source's git_token secret is a JSON object without a token.")
        text = value["token"]
        username = str(value.get("username") or username)
    if not text or any(ord(ch) < 33 for ch in text):
        raise SourceRefused("The source's git_token secret is not a token.")
    return username, text


class GitConnector(Connector):
    CONNECTOR_TYPE = "git"
    TITLE = "Git repository"
    CONFIG_MODEL = GitConfig
    SECRET_KIND: ClassVar[str | None] = SECRET_KIND
    SECRET_OPTIONAL = True  # a public repository is read without one
    CHANGE_SIGNAL = ("the file's blob id, read from the tree at the ref before any content is fetched; the ref's "
                     "commit id answers 'nothing changed' in one round trip")

    def __init__(self, config: GitConfig, remote: Any, state: Mapping[str, Any]) -> None:
        self.config = config
        self.remote = remote
        self.state = dict(state)
        self.ref_label = config.ref or "HEAD"
        self._match = glob_regex(config.paths)

    @classmethod
    def check(cls, model: BaseModel, settings: SyncContextSettings) -> ConfigRefusal | None:
        assert isinstance(model, GitConfig)
        problem = url_problem_for_source(model.url, sync_policy(settings), https_only=True)
        return ConfigRefusal(problem, "url") if problem else None

    @classmethod
    def open(cls, config: BaseModel, credential: str | None, *, external_id: str, settings: SyncContextSettings,
             client_factory: Any, state: Mapping[str, Any]) -> GitConnector:
        import httpx

        from sluice.sync.connectors.gitwire import GitRemote

        assert isinstance(config, GitConfig)
        auth = read_token(credential) if credential is not None else None
        client = guarded_client(sync_policy(settings), timeout=httpx.Timeout(30.0, read=120.0), max_redirects=0,
                                user_agent="sluice-sync (git)")
        return cls(config, GitRemote(config.url, client, auth), state)

    @classmethod
    def content_id(cls, etag: str | None) -> str | None:
        return etag if etag is not None and _COMMIT.fullmatch(etag) else None  # a blob id; not a submodule's

    def address(self, path: str) -> str:
        return f"git+{self.config.url}@{self.ref_label}:{path}"

    def _commit(self) -> str:
        ref = self.config.ref
        if ref is not None and _COMMIT.fullmatch(ref):
            return ref
        if ref is None:
            wanted = ["HEAD"]
        elif ref.startswith("refs/"):
            wanted = [ref]
        else:
            wanted = [f"refs/heads/{ref}", f"refs/tags/{ref}"]
        refs = self.remote.ls_refs(wanted)
        for name in wanted:
            if name in refs:
                oid, peeled = refs[name]
                return str(peeled or oid)
        raise LookupError(f"The repository has no {'default branch' if ref is None else repr(ref)}; check ref.")

    def list_files(self, limit: int | None = None) -> RemoteListing:
        try:
            commit = self._commit()
            if self.state.get("commit") == commit:
                return RemoteListing([], True, state={"commit": commit}, unchanged=True)
            objects = self.remote.fetch_trees(commit)
            return self._listing(commit, objects, min(limit or self.config.max_files, self.config.max_files))
        except LookupError as exc:
            return RemoteListing([], False, f"{exc} Nothing was removed.")
        except Exception as exc:
            return RemoteListing([], False, f"The repository could not be listed ({self.describe_failure(exc)}): "
                                            "check the source's url, ref and credential. Nothing was removed.")

    def _listing(self, commit: str, objects: dict[str, tuple[int, bytes]], limit: int) -> RemoteListing:
        kind, raw = objects[commit]
        tree = raw.split(b"\n", 1)[0].removeprefix(b"tree ").decode()
        lfs = self._lfs_patterns(objects.get(tree))
        files: list[RemoteFile] = []
        stack = [("", tree)]
        while stack:
            prefix, tree_id = stack.pop()
            if tree_id not in objects:
                return RemoteListing(files, False, "The server's answer lacked part of the tree; nothing was "
                                                   "removed. The next run lists it again.")
            for name_b, mode, sha in tree_entries(objects[tree_id][1]):
                path = prefix + name_b.decode("utf-8", errors="replace")
                if mode & 0o170000 == 0o040000:
                    stack.append((path + "/", sha))
                    continue
                note = None
                if mode & 0o170000 == 0o160000:
                    note = SUBMODULE_NOTE
                elif not self._match.fullmatch(path):
                    continue
                elif mode & 0o170000 == 0o120000:
                    note = SYMLINK_NOTE
                elif lfs is not None and lfs.fullmatch(path):
                    note = LFS_NOTE
                if len(files) >= limit:
                    return RemoteListing(files, False, (
                        f"The listing was cut at {limit} files (max_files, or SYNC_MAX_KEYS_PER_RUN): those were "
                        "synced and nothing was removed. Narrow paths, or raise max_files."))
                files.append(RemoteFile(key=path, source_path=self.address(path), size=0,
                                        etag=f"submodule:{sha}" if note == SUBMODULE_NOTE else sha, note=note))
        files.sort(key=lambda f: f.key)
        return RemoteListing(files, True, state={"commit": commit})

    def _lfs_patterns(self, root: tuple[int, bytes] | None) -> re.Pattern[str] | None:
        """The globs the root .gitattributes sends through Git LFS (its one small blob, fetched only
        when it exists and the tree changed)."""
        if root is None:
            return None
        entry = next((sha for name, _, sha in tree_entries(root[1]) if name == b".gitattributes"), None)
        if entry is None:
            return None
        out = io.BytesIO()
        if self.remote.fetch_blob(entry, out, MAX_ATTRIBUTES) > MAX_ATTRIBUTES:
            return None
        globs = []
        for line in out.getvalue().decode("utf-8", errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 2 and not parts[0].startswith("#") and "filter=lfs" in parts[1:]:
                pattern = parts[0]
                globs.append(pattern if "/" in pattern.strip("/") else f"**/{pattern.lstrip('/')}")
        return glob_regex(globs) if globs else None

    def _fetch(self, file: RemoteFile, target: Path, max_bytes: int) -> None:
        if file.etag is None or not re.fullmatch(r"[0-9a-f]{40}", file.etag):
            raise SourceRefused("The file has no blob id to fetch.")
        with target.open("wb") as out:
            size = self.remote.fetch_blob(file.etag, out, max_bytes)
            if size > max_bytes:
                # The pack's header said the size: nothing of it was inflated. A file one byte longer
                # than allowed (sparse: nothing is written) is how a fetch says "too large".
                out.truncate(max_bytes + 1)

    def describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, EndpointNotAllowed):
            return NOT_REACHABLE
        code = getattr(exc, "code", None)
        return str(code) if code else type(exc).__name__
