"""What a remote name may decide (R-SYNC-4): nothing about where a byte lands.

Whoever can drop a file in a synced bucket chooses the string the next run handles. A
remote name is a label: it is reduced to its final component, and the place it is written
is resolved and confirmed to be a child of the run's working directory, so ``..``, its
encodings, its lookalikes and a symlink already sitting in the directory are one question
rather than a list of spellings to keep up with. A name that is no component at all
(``..``, ``.``, a trailing ``/``) is refused. The connector base class asks this, not a
connector, so a connector added later inherits the refusal.
"""

from __future__ import annotations

import re
from pathlib import Path

from sluice.storage import safe_filename


class RemoteNameRefused(ValueError):
    """A remote key whose name is no file name; the message is the sentence a run records."""


def remote_name(key: str) -> str:
    """The final component of a remote key: the file's name, and nothing of its path.

    Both separators count (a Windows-made name may carry backslashes). Refused: an empty
    name (a key ending in a separator), ``.``, ``..``, and a name holding a NUL.
    """
    name = re.split(r"[\\/]", key)[-1]
    if name in ("", ".", ".."):
        shown = name or "/"
        raise RemoteNameRefused(
            f"The key ends in '{shown}', which is not a file name; the file was not synced.")
    if "\x00" in name:
        raise RemoteNameRefused("The key's name holds a NUL character; the file was not synced.")
    return name


def destination(workdir: Path, key: str) -> Path:
    """Where the file named by ``key`` is written inside ``workdir``: confirmed to be its child.

    The on-disk name is the storage-safe form of the final component (bounded, no
    separators); the result is resolved, so a symlink already at that name that points
    elsewhere is refused too.
    """
    root = workdir.resolve()
    target = (root / safe_filename(remote_name(key))).resolve()
    if target.parent != root:
        raise RemoteNameRefused("The file's name resolves outside the run's working directory; it was not synced.")
    return target
