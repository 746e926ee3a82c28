"""Which files a knowledge base indexes: every family of SPEC §4 but images, which are stored
with chat messages only. The one place this rule is written."""

from __future__ import annotations

from sluice.errors import UnsupportedTypeError
from sluice.parsing import SUPPORTED_EXTENSIONS, FileKind

KB_FAMILIES = frozenset(
    {"pdf", "docx", "doc", "spreadsheet", "presentation", "document", "email", "text", "archive"}
)


def kb_extensions() -> list[str]:
    """The extensions a knowledge base takes, sorted."""
    return sorted(ext for ext, family in SUPPORTED_EXTENSIONS.items() if family in KB_FAMILIES)


def chat_only_extensions() -> list[str]:
    return sorted(set(SUPPORTED_EXTENSIONS) - set(kb_extensions()))


def kb_kind(kind: FileKind) -> FileKind:
    """``kind``, if a knowledge base indexes it; refused otherwise."""
    _check_family(kind.family, kind.extension)
    return kind


def kb_family_by_name(filename: str) -> str:
    """The family a name promises (the bytes are checked against it when they arrive)."""
    lower = filename.lower()
    for ext in sorted(SUPPORTED_EXTENSIONS, key=len, reverse=True):
        if lower.endswith(ext):
            _check_family(SUPPORTED_EXTENSIONS[ext], ext)
            return SUPPORTED_EXTENSIONS[ext]
    raise UnsupportedTypeError(
        "This file type is not supported. Supported: " + ", ".join(sorted(SUPPORTED_EXTENSIONS)) + "."
    )


def _check_family(family: str, extension: str) -> None:
    if family not in KB_FAMILIES:
        raise UnsupportedTypeError(
            f"{extension} files can be attached to a chat but not indexed in a knowledge base."
        )
