"""Which files a knowledge base indexes: every family of SPEC §4 but images, which are stored
with chat messages only — unless the collection reads by OCR (R-PARSE-7), when PNG, JPEG and TIFF
are documents too. The one place this rule is written."""

from __future__ import annotations

from sluice.errors import UnsupportedTypeError
from sluice.parsing import SUPPORTED_EXTENSIONS, FileKind
from sluice.parsing.ocr import OCR_OFF_HINT

KB_FAMILIES = frozenset(
    {"pdf", "docx", "doc", "spreadsheet", "presentation", "document", "email", "text", "archive"}
)


# The images OCR reads as documents (kinds, and the extensions they go by).
OCR_IMAGE_KINDS = frozenset({"png", "jpg", "tif"})
OCR_IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff"})


def kb_extensions() -> list[str]:
    """The extensions a knowledge base takes, sorted."""
    return sorted(ext for ext, family in SUPPORTED_EXTENSIONS.items() if family in KB_FAMILIES)


def ocr_extensions() -> list[str]:
    """The image extensions a knowledge base indexes with OCR on, sorted."""
    return sorted(OCR_IMAGE_EXTENSIONS & set(SUPPORTED_EXTENSIONS))


def chat_only_extensions() -> list[str]:
    return sorted(set(SUPPORTED_EXTENSIONS) - set(kb_extensions()))


def kb_kind(kind: FileKind, *, ocr: bool | None = False) -> FileKind:
    """``kind``, if a knowledge base indexes it; refused otherwise. ``ocr``: whether the collection (with
    the upload's override) reads by OCR; None when not known yet (an image OCR reads passes, and is
    checked again once it is)."""
    if kind.kind in OCR_IMAGE_KINDS and ocr is not False:
        return kind
    if kind.kind in OCR_IMAGE_KINDS:
        raise UnsupportedTypeError(_ocr_off_sentence(kind.extension))
    _check_family(kind.family, kind.extension)
    return kind


def kb_family_by_name(filename: str, *, ocr: bool | None = False) -> str:
    """The family a name promises (the bytes are checked against it when they arrive)."""
    lower = filename.lower()
    for ext in sorted(SUPPORTED_EXTENSIONS, key=len, reverse=True):
        if lower.endswith(ext):
            if ext in OCR_IMAGE_EXTENSIONS and ocr is not False:
                return SUPPORTED_EXTENSIONS[ext]
            if ext in OCR_IMAGE_EXTENSIONS:
                raise UnsupportedTypeError(_ocr_off_sentence(ext))
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


def _ocr_off_sentence(extension: str) -> str:
    return f"{extension} images are indexed in a knowledge base only with OCR on. {OCR_OFF_HINT}"
