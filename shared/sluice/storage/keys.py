"""Where each object lives (R-UP-5, DESIGN "Data flow"). Filenames are labels, never paths."""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import dataclass

MAX_NAME_CHARS = 120
MAX_DISPLAY_CHARS = 255
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_filename(name: str) -> str:
    """A storage-safe version of an untrusted filename.

    Path separators become underscores after dropping `.`/`..` components, so
    ``../../etc/passwd`` is ``etc_passwd``; control characters go; the result is
    bounded and keeps its extension, and is never empty or dot-only.
    """
    name = unicodedata.normalize("NFKC", name or "")
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    parts = [p for p in re.split(r"[\\/]+", name) if p not in ("", ".", "..")]
    cleaned = _UNSAFE.sub("_", "_".join(parts)).strip("._")
    cleaned = re.sub(r"_{2,}", "_", cleaned)
    if not cleaned:
        cleaned = "file"
    if len(cleaned) > MAX_NAME_CHARS:
        stem, dot, ext = cleaned.rpartition(".")
        if dot and 0 < len(ext) <= 10 and stem:
            cleaned = stem[: MAX_NAME_CHARS - len(ext) - 1] + "." + ext
        else:
            cleaned = cleaned[:MAX_NAME_CHARS]
    return cleaned


def display_name(name: str) -> str:
    """The name a document is listed and downloaded under: what the user called it, made harmless.

    The final path component only; control and format characters removed (a NUL
    cannot be stored, and a right-to-left override makes ``report‮fdp.exe`` read as
    ``report.pdf``); bounded; never empty. Unlike ``safe_filename`` it keeps
    spaces, accents and any script: it is a label, never a key.
    """
    name = unicodedata.normalize("NFC", name or "")
    name = "".join(ch for ch in name if unicodedata.category(ch) not in ("Cc", "Cf", "Cs"))
    name = re.split(r"[\\/]", name)[-1].strip()
    if name in ("", ".", ".."):
        return "file"
    if len(name) > MAX_DISPLAY_CHARS:
        stem, dot, ext = name.rpartition(".")
        keep = f".{ext}" if dot and 0 < len(ext) <= 10 and stem else ""
        name = name[: MAX_DISPLAY_CHARS - len(keep)] + keep
    return name


def rag_key(collection: str, filename: str, object_id: uuid.UUID | None = None) -> str:
    """``rag/<collection>/<uuid>_<safe name>``: two ``report.csv`` never collide."""
    return f"rag/{collection}/{object_id or uuid.uuid4()}_{safe_filename(filename)}"


def incoming_key(document_id: uuid.UUID, filename: str) -> str:
    """``incoming/<doc>/<safe name>``: where a presigned POST lands before the parse stage takes it.

    The POST's fields can be sent again until they expire; landing apart from the
    stored original means a second POST never replaces what was indexed (the
    stage moves only the first arrival to the document's storage key).
    """
    return f"{incoming_prefix(document_id)}{safe_filename(filename)}"


def incoming_prefix(document_id: uuid.UUID) -> str:
    return f"incoming/{document_id}/"


def incoming_document_id(key: str) -> uuid.UUID | None:
    """The document an ``incoming/<doc>/<name>`` object was uploaded for, or None."""
    parts = key.split("/", 2)
    if len(parts) < 3 or parts[0] != "incoming" or not parts[2]:
        return None
    try:
        return uuid.UUID(parts[1])
    except ValueError:
        return None


def chat_key(user_id: str, filename: str, object_id: uuid.UUID | None = None) -> str:
    """``chat/<user_id>/<uuid>_<safe name>`` (R-UP-5): a chat file, its owner's only.

    The user id comes from the identity provider's ``sub``, which may hold any character: it is
    made storage-safe like a filename, and the uuid keeps two users whose ids sanitise alike apart.
    """
    return f"chat/{safe_filename(user_id)}/{object_id or uuid.uuid4()}_{safe_filename(filename)}"


def chat_text_key(storage_path: str) -> str:
    """Where a chat file's extracted text is kept beside it: its key plus ``.txt``."""
    return f"{storage_path}.txt"


def chat_incoming_key(file_id: uuid.UUID, filename: str) -> str:
    """``chat-incoming/<file>/<safe name>``: where a presigned chat upload lands before it is checked.

    Apart from ``incoming/`` (the knowledge-base uploads, another queue) and from the stored
    original, so a replayed POST never replaces a file that was checked (the first arrival is kept).
    """
    return f"chat-incoming/{file_id}/{safe_filename(filename)}"


def chat_incoming_file_id(key: str) -> uuid.UUID | None:
    """The chat file a ``chat-incoming/<file>/<name>`` object was uploaded for, or None."""
    parts = key.split("/", 2)
    if len(parts) < 3 or parts[0] != "chat-incoming" or not parts[2]:
        return None
    try:
        return uuid.UUID(parts[1])
    except ValueError:
        return None


def collection_prefix(collection: str) -> str:
    return f"rag/{collection}/"


def inbox_kb_id(key: str) -> uuid.UUID | None:
    """The knowledge base an ``inbox/<kb_id>/<path>`` drop is addressed to, or None."""
    parts = key.split("/", 2)
    if len(parts) < 3 or parts[0] != "inbox" or not parts[2] or parts[2].endswith("/"):
        return None
    try:
        return uuid.UUID(parts[1])
    except ValueError:
        return None


def content_key(document_id: uuid.UUID) -> str:
    """``text/<doc>.txt``: a document's parsed text, kept as long as the document (stage artifacts expire)."""
    return f"text/{document_id}.txt"


# "images": the parsed text with its images, for the describe step (R-PARSE-6), which writes "parsed".
# "ocr": the pages Textract recognised in an attempt, so a redelivery does not send them again (issue 37);
# no stage follows it (the bucket's notifications name the other three prefixes only).
STAGE_SUFFIX = {"parsed": "json", "chunks": "json", "images": "json", "ocr": "json"}


def stage_key(stage: str, document_id: uuid.UUID, attempt: int) -> str:
    """``stage/<stage>/<doc>.<attempt>.<ext>``: one artifact per document attempt."""
    return f"stage/{stage}/{document_id}.{attempt}.{STAGE_SUFFIX[stage]}"


@dataclass(frozen=True)
class StageRef:
    stage: str
    document_id: uuid.UUID
    attempt: int


def parse_stage_key(key: str) -> StageRef | None:
    m = re.fullmatch(r"stage/(parsed|chunks|images)/([0-9a-f-]{36})\.(\d+)\.json", key)
    if not m:
        return None
    return StageRef(m.group(1), uuid.UUID(m.group(2)), int(m.group(3)))
