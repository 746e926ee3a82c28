"""``sluice ingest``'s first step, without the network: walk the path given (hidden files and
folders are skipped, so are extensions the base does not index and empty files, each with its
reason), hash each file (sha256, the ``content_hash`` the documents API lists), and plan what to
send and how, leaving out every file whose content the base already holds."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_HASH_BLOCK = 1024 * 1024
# Preferred when one content is in the base more than once: the copy that says the most.
_STATUS_RANK = {"done": 0, "processing": 1, "error": 2}


@dataclass(frozen=True)
class LocalFile:
    path: Path
    shown: str  # the path as the user reads it in the output: relative to the folder given
    size: int
    sha256: str

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Skipped:
    shown: str
    reason: str


@dataclass(frozen=True)
class Known:
    """A document the base already holds, as the documents list shows it."""

    id: str
    filename: str
    filesize: int | None
    status: str
    content_hash: str | None
    error_message: str | None
    has_file: bool

    @classmethod
    def from_api(cls, doc: dict[str, Any]) -> Known:
        return cls(id=str(doc["id"]), filename=str(doc["filename"]), filesize=doc.get("filesize"),
                   status=str(doc["status"]), content_hash=doc.get("content_hash"),
                   error_message=doc.get("error_message"), has_file=bool(doc.get("has_file")))


@dataclass
class Plan:
    direct: list[LocalFile] = field(default_factory=list)
    presigned: list[LocalFile] = field(default_factory=list)
    # Content the base holds already: followed (if still processing) and counted, never sent.
    present: list[tuple[LocalFile, Known]] = field(default_factory=list)
    # Content whose document failed earlier: sent again with --retry-failed, else reported.
    failed_before: list[tuple[LocalFile, Known]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def to_send(self) -> list[LocalFile]:
        return self.direct + self.presigned


def is_supported(name: str, extensions: Sequence[str]) -> bool:
    lowered = name.lower()
    return any(lowered.endswith(ext.lower()) for ext in extensions)


def _extension(name: str) -> str:
    suffixes = Path(name).suffixes
    return "".join(suffixes[-2:]) if suffixes[-2:-1] == [".tar"] else (suffixes[-1] if suffixes else "")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def collect(root: Path, extensions: Sequence[str]) -> tuple[list[LocalFile], list[Skipped]]:
    """The files under ``root`` a knowledge base may take, and what was left out and why.

    A file named on the command line is taken even if its name starts with a dot;
    inside a folder, hidden files and hidden folders are skipped (a hidden folder
    is reported once, not file by file), and symbolic links to folders are not
    followed (a link may point back up the tree).
    """
    if root.is_file():
        candidates = [(root, root.name)]
        skipped: list[Skipped] = []
    elif root.is_dir():
        candidates, skipped = _walk(root)
    else:
        raise FileNotFoundError(f"{root}: no such file or folder")
    files: list[LocalFile] = []
    for path, shown in candidates:
        if not is_supported(path.name, extensions):
            ext = _extension(path.name)
            reason = f"unsupported extension ({ext})" if ext else "no extension"
            skipped.append(Skipped(shown, reason + ": a knowledge base does not index it"))
            continue
        try:
            size = path.stat().st_size
            if size == 0:
                skipped.append(Skipped(shown, "empty file"))
                continue
            files.append(LocalFile(path, shown, size, sha256_of(path)))
        except OSError as exc:
            skipped.append(Skipped(shown, f"unreadable: {exc.strerror or exc}"))
    return files, skipped


def _walk(root: Path) -> tuple[list[tuple[Path, str]], list[Skipped]]:
    found: list[tuple[Path, str]] = []
    skipped: list[Skipped] = []
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(folder)
        for name in sorted(dirnames):
            shown = (here / name).relative_to(root).as_posix()
            if name.startswith("."):
                skipped.append(Skipped(shown + "/", "hidden folder"))
            elif (here / name).is_symlink():
                skipped.append(Skipped(shown + "/", "symbolic link to a folder: not followed"))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (here / d).is_symlink())
        for name in sorted(filenames):
            path = here / name
            shown = path.relative_to(root).as_posix()
            if name.startswith("."):
                skipped.append(Skipped(shown, "hidden file"))
            elif not path.is_file():
                skipped.append(Skipped(shown, "not a regular file"))
            else:
                found.append((path, shown))
    return found, skipped


def index_known(documents: Sequence[Known]) -> tuple[dict[str, Known], dict[tuple[str, int | None], Known]]:
    """The base's documents by content hash, and those not read yet (no hash) by name and size."""
    by_hash: dict[str, Known] = {}
    unread: dict[tuple[str, int | None], Known] = {}
    for doc in documents:
        if doc.content_hash:
            held = by_hash.get(doc.content_hash)
            if held is None or _STATUS_RANK.get(doc.status, 3) < _STATUS_RANK.get(held.status, 3):
                by_hash[doc.content_hash] = doc
        elif doc.status == "processing":
            # Queued, not parsed yet: the hash comes with the parse stage. Name and size stand in,
            # so a run started again while the last one's files wait in the queue sends none twice.
            unread.setdefault((doc.filename, doc.filesize), doc)
    return by_hash, unread


def plan(files: Sequence[LocalFile], documents: Sequence[Known], *, direct_limit: int,
         display_name: Callable[[str], str] = lambda name: name) -> Plan:
    """What to send and how: direct up to ``direct_limit`` bytes, presigned above; nothing the base holds.

    ``display_name`` is the name the server lists a file under (sluice.storage.display_name).
    """
    by_hash, unread = index_known(documents)
    result = Plan()
    first_of: dict[str, LocalFile] = {}
    for f in files:
        if f.sha256 in first_of:
            result.skipped.append(Skipped(f.shown, f"same content as {first_of[f.sha256].shown}"))
            continue
        first_of[f.sha256] = f
        known = by_hash.get(f.sha256) or unread.get((display_name(f.name), f.size))
        if known is not None and known.status == "error":
            result.failed_before.append((f, known))
        elif known is not None:
            result.present.append((f, known))
        elif f.size <= direct_limit:
            result.direct.append(f)
        else:
            result.presigned.append(f)
    return result
