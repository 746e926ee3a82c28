"""Mutated documents for fuzzing the readers (the suite's test and bench/fuzz.py share it).

A seed is a real file of the format from ../shared/corpus/real/ where that folder is present,
and always the generated sample of tests/unit/parsing/parsing_samples.py, so a bare clone fuzzes
too. A mutation is a short list of byte edits (flip, truncate, insert, delete, duplicate); for a
ZIP container (OOXML, OpenDocument, .zip) an edit may instead change one member's bytes and
re-pack the archive, so the XML and the readers behind the container see damaged input rather
than only a failed CRC. Every input goes through ``sniff`` and then ``extract_isolated``, the
path the parse stage takes: the child's time and memory limits are the ones under test.
"""

from __future__ import annotations

import io
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from sluice.errors import DocumentRefused
from sluice.parsing import ParseBudget
from sluice.parsing.budget import truncation_marker
from sluice.parsing.document import ParsedDocument
from sluice.parsing.extract import extract
from sluice.parsing.isolation import extract_isolated
from sluice.parsing.sniff import sniff
from tests.unit.parsing.parsing_samples import CORPUS, budget, sample_for

# format -> (the corpus folder holding real files of it, the extensions taken from there)
FORMATS: dict[str, tuple[str, tuple[str, ...]]] = {
    ".pdf": ("pdf", (".pdf",)),
    ".docx": ("docx", (".docx", ".docm")),
    ".xlsx": ("xlsx", (".xlsx", ".xlsm")),
    ".xls": ("xls", (".xls",)),
    ".pptx": ("pptx", (".pptx", ".pptm")),
    ".odt": ("odt", (".odt",)),
    ".ods": ("ods", (".ods",)),
    ".odp": ("odp", (".odp",)),
    ".msg": ("msg", (".msg",)),
    ".txt": ("text", (".txt",)),
    ".md": ("text", (".md",)),
    ".csv": ("csv", (".csv",)),
    ".json": ("json", (".json",)),
    ".xml": ("xml", (".xml",)),
    ".html": ("html", (".html", ".htm")),
    ".zip": ("zip", (".zip",)),
    ".tar.gz": ("targz", (".tar.gz", ".tgz")),
}
# Legacy Word (.doc) is read through LibreOffice, seconds per file: bench/fuzz.py covers it.
SEEDS_PER_FORMAT = 3
SEED_MAX_BYTES = 256 * 1024
CRASH_SENTENCE = "the reader stopped unexpectedly"


def fuzz_budget() -> ParseBudget:
    """The production limits of the parse child, with a shorter clock so a hang shows quickly."""
    return budget(timeout_seconds=20, memory_mb=1536)


def corpus_seeds(extension: str, limit: int = SEEDS_PER_FORMAT) -> list[tuple[str, bytes]]:
    folder, suffixes = FORMATS[extension]
    directory = CORPUS / folder
    if not directory.is_dir():
        return []
    files = sorted((p for p in directory.iterdir() if p.is_file() and p.name.lower().endswith(suffixes)
                    and p.stat().st_size <= SEED_MAX_BYTES), key=lambda p: (p.stat().st_size, p.name))
    return [(p.name, p.read_bytes()) for p in files[:limit]]


def seeds(extension: str, limit: int = SEEDS_PER_FORMAT) -> list[tuple[str, bytes]]:
    """Real files first (when ../shared is present), then the generated sample."""
    return [*corpus_seeds(extension, limit), (f"generated{extension}", sample_for(extension))]


def corpus_present() -> bool:
    return Path(CORPUS).is_dir()


@dataclass(frozen=True)
class Edit:
    op: str
    at: float  # where, as a fraction of the length (so an edit fits any seed)
    size: int
    payload: bytes


edits = st.builds(
    Edit,
    op=st.sampled_from(["flip", "truncate", "insert", "delete", "duplicate", "member"]),
    at=st.floats(min_value=0, max_value=1, allow_nan=False),
    size=st.integers(min_value=1, max_value=4096),
    payload=st.binary(min_size=1, max_size=64)
    | st.sampled_from([b"\x00" * 8, b"\xff" * 8, b"<![CDATA[", b"<!DOCTYPE x [<!ENTITY a 'b'>]>", b"&a;",
                       b"\xef\xbb\xbf", b"\xd8\x00", b"99999999999", b"-1", b"obj <<", b"/Length 999999"]),
)


def mutate(data: bytes, plan: list[Edit]) -> bytes:
    for edit in plan:
        data = _apply(data, edit)
    return data


def _apply(data: bytes, edit: Edit) -> bytes:
    n = len(data)
    at = min(int(edit.at * n), max(n - 1, 0))
    if edit.op == "member" and zipfile.is_zipfile(io.BytesIO(data)):
        return _mutate_member(data, edit)
    if edit.op == "flip" and n:
        out = bytearray(data)
        for i, b in enumerate(edit.payload):
            if at + i < n:
                out[at + i] ^= b or 0xFF
        return bytes(out)
    if edit.op == "truncate":
        return data[:at]
    if edit.op == "delete":
        return data[:at] + data[at + edit.size:]
    if edit.op == "duplicate":
        return data[:at] + data[at:at + edit.size] * 3 + data[at:]
    return data[:at] + edit.payload + data[at:]  # insert (and "member" of what is not a ZIP)


def _mutate_member(data: bytes, edit: Edit) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = [(info, archive.read(info)) for info in archive.infolist()]
    except Exception:
        return data + edit.payload  # damaged already: just grow it
    if not members:
        return data
    index = int(edit.at * len(members)) % len(members)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for i, (info, content) in enumerate(members):
            if i == index:
                inner = Edit(op="flip" if edit.size % 3 == 0 else "insert" if edit.size % 3 == 1 else "truncate",
                             at=(edit.size % 97) / 97, size=edit.size, payload=edit.payload)
                content = _apply(content, inner)
            archive.writestr(info, content)
    return out.getvalue()


@dataclass(frozen=True)
class Outcome:
    kind: str  # "text" | "refused"
    detail: str  # the refusal's class, or the text's length
    message: str
    seconds: float


def read_like_the_parse_stage(filename: str, data: bytes, limits: ParseBudget, *, isolated: bool = True) -> Outcome:
    """sniff, then the isolated child (or ``extract`` in this process, many times faster, for the
    many examples); an exception other than a refusal propagates (a finding)."""
    started = time.monotonic()
    try:
        kind = sniff(data, filename)
        document = extract_isolated(data, kind, limits) if isolated else extract(data, kind, limits)
    except DocumentRefused as refused:
        return Outcome("refused", type(refused).__name__, refused.message, time.monotonic() - started)
    return Outcome("text", str(len(document.text)), _check_text(document, limits), time.monotonic() - started)


def _check_text(document: ParsedDocument, limits: ParseBudget) -> str:
    text = document.text
    assert isinstance(text, str)
    assert "\x00" not in text, "a NUL reached the text (PostgreSQL text cannot hold it)"
    text.encode("utf-8")  # strict: a lone surrogate would fail the artifact and the row
    assert len(text) <= limits.max_chars + len(truncation_marker(limits.max_chars))
    return ""


def problems_with(outcome: Outcome, limits: ParseBudget) -> list[str]:
    """What makes an outcome other than text or a clean refusal in time."""
    found = []
    if outcome.seconds > limits.timeout_seconds + 10:
        found.append(f"took {outcome.seconds:.1f} s against a {limits.timeout_seconds} s limit")
    if outcome.kind == "refused":
        if not outcome.message.strip():
            found.append(f"{outcome.detail} without a sentence")
        lowered = outcome.message.lower()
        if "traceback" in lowered or 'file "' in lowered or "/sluice/" in lowered:
            found.append(f"a refusal that shows internals: {outcome.message[:200]}")
    return found
