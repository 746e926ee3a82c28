"""What an archive may hold (R-ARC-1, R-ARC-2), counted as it is walked: member paths that stay
inside the folder they would be unpacked into, and the entry, size, ratio and member limits of an
archive and every archive inside it, counted together (``Tally``). Each refusal is a sentence that
quotes the member it stopped at (``show_path``)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from sluice.errors import ArchiveRefusedError
from sluice.parsing.budget import ParseBudget

# Longer than any filesystem allows (PATH_MAX); such names exist only to break unpackers.
MAX_PATH_CHARS = 4096


def is_safe_member_path(path: str) -> bool:
    """True when ``path`` stays inside the folder it would be unpacked into, on any OS."""
    if not path or len(path) > MAX_PATH_CHARS:
        return False
    if "\\" in path or any(unicodedata.category(ch) == "Cc" for ch in path):
        return False
    # Any character before a colon: Windows path APIs (and Python's ntpath) read it as a drive.
    if path.startswith("/") or path[1:2] == ":":
        return False
    return ".." not in path.split("/")


def show_path(path: str) -> str:
    """A member path as a refusal can quote it: control characters visible, undecodable
    bytes as U+FFFD (the sentence is stored as UTF-8), length bounded."""
    shown = "".join(_shown_char(ch) for ch in path)
    if len(shown) > 120:
        shown = shown[:117] + "…"
    return f"'{shown}'"


def _shown_char(ch: str) -> str:
    category = unicodedata.category(ch)
    if category == "Cc":
        return f"\\x{ord(ch):02x}"
    return "\ufffd" if category == "Cs" else ch


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def path_problem(path: str) -> str | None:
    if is_safe_member_path(path):
        return None
    if not path:
        return "has an empty name"
    if len(path) > MAX_PATH_CHARS:
        return f"has a path longer than {MAX_PATH_CHARS:,} characters"
    if any(unicodedata.category(ch) == "Cc" for ch in path):
        return "has a control character in its path"
    if "\\" in path:
        return "has a backslash in its path, which Windows reads as a folder separator"
    if path.startswith("/"):
        return "starts at the root of the filesystem (/)"
    if path[1:2] == ":":
        return "starts at a drive (like C:)"
    return "leads outside the archive (../)"


def _normalised(path: str) -> str:
    return "/".join(part for part in path.split("/") if part not in ("", "."))


# The ratio limit applies past this much unpacked: a bomb is measured by what it costs to unpack, and a
# tiny archive (tar pads to 10 KiB, a repeated line deflates to nothing) is over 100x and costs nothing.
RATIO_FLOOR_BYTES = 1 << 20


@dataclass
class Tally:
    """Counters shared by an archive and every archive inside it."""

    budget: ParseBudget
    outer_size: int
    label: str  # "The archive", "This Word document"
    entries: int = 0
    total: int = 0

    def refuse(self, sentence: str) -> ArchiveRefusedError:
        return ArchiveRefusedError(f"{self.label} was refused: {sentence}")

    def count_entry(self) -> None:
        self.entries += 1
        if self.entries > self.budget.archive_max_entries:
            raise self.refuse(f"it holds more than {self.budget.archive_max_entries:,} files and folders.")

    def declared(self, path: str, size: int) -> None:
        # A header that admits to a bomb is refused at once; one that hides it is caught below.
        if size > self.budget.archive_max_member_bytes:
            raise self._member_too_big(path)

    def add(self, path: str, member_bytes: int, chunk: int) -> None:
        self.total += chunk
        if member_bytes > self.budget.archive_max_member_bytes:
            raise self._member_too_big(path)
        if self.total > self.budget.archive_max_bytes:
            raise self.refuse(
                f"it unpacks to more than {_mib(self.budget.archive_max_bytes)} "
                f"(stopped while reading {show_path(path)})."
            )
        if self.total > max(self.budget.archive_max_ratio * self.outer_size, RATIO_FLOOR_BYTES):
            raise self.refuse(
                f"it unpacks to more than {self.budget.archive_max_ratio} times its own size "
                f"(stopped while reading {show_path(path)}), which is how decompression bombs work."
            )

    def _member_too_big(self, path: str) -> ArchiveRefusedError:
        return self.refuse(
            f"{show_path(path)} unpacks to more than {_mib(self.budget.archive_max_member_bytes)}, "
            "the limit for one file in an archive."
        )


class Names:
    """Duplicate paths and file/folder clashes within one archive."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self.files: set[str] = set()
        self.explicit_folders: set[str] = set()
        self.folders: set[str] = set()  # explicit ones and every parent of a path

    def add(self, path: str, is_dir: bool) -> None:
        key = _normalised(path)
        if not key:
            return  # "./": the archive's own root
        parts = key.split("/")
        parents = ["/".join(parts[:i]) for i in range(1, len(parts))]
        for parent in parents:
            if parent in self.files:
                raise self.tally.refuse(f"{show_path(parent)} is both a file and a folder.")
        if is_dir:
            if key in self.explicit_folders:
                raise self.tally.refuse(f"the path {show_path(path)} appears twice.")
            if key in self.files:
                raise self.tally.refuse(f"{show_path(path)} is both a file and a folder.")
            self.explicit_folders.add(key)
            self.folders.add(key)
        else:
            if key in self.files:
                raise self.tally.refuse(f"the path {show_path(path)} appears twice.")
            if key in self.folders:
                raise self.tally.refuse(f"{show_path(path)} is both a file and a folder.")
            self.files.add(key)
        self.folders.update(parents)
