"""Parsing in a child process with a time and memory limit (R-PARSE-5).

A parser that crashes, hangs or eats memory on one file must fail that file
only. ``extract_isolated`` runs ``extract`` in a fresh interpreter
(``python -m sluice.parsing.isolation``) and talks to it over stdin/stdout:
AWS Lambda has no ``/dev/shm``, so ``multiprocessing`` queues and pools (which
need POSIX semaphores) do not work there, while plain pipes do, and a fresh
interpreter is safe to start from a parent that runs threads (fork is not).

The child limits its own address space (RLIMIT_AS) before it reads a byte. The
parent waits ``timeout_seconds`` and then kills the child's whole process group
(a LibreOffice conversion runs under it). The child answers in JSON — never a
pickle, which would let a parser exploited in the child run code in the parent —
and a refusal comes back as the same DocumentRefused class with the same message.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sluice import errors
from sluice.errors import DocumentRefused, ParseError, ParseTimeoutError
from sluice.parsing.budget import ParseBudget, memory_sentence
from sluice.parsing.document import ArchiveMember, PageText, ParsedDocument
from sluice.parsing.kinds import FileKind

log = logging.getLogger(__name__)

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_CRASH_SENTENCE = "This document could not be read: the reader stopped unexpectedly on it."
_STDERR_TAIL = 4000


def _refusal_classes() -> dict[str, type[DocumentRefused]]:
    found: dict[str, type[DocumentRefused]] = {}
    pending: list[type[DocumentRefused]] = [DocumentRefused]
    while pending:
        cls = pending.pop()
        if cls.__module__ == errors.__name__:
            found[cls.__name__] = cls
        pending.extend(cls.__subclasses__())
    return found


def extract_isolated(data: bytes, kind: FileKind, budget: ParseBudget) -> ParsedDocument:
    header = json.dumps({"kind": asdict(kind), "budget": asdict(budget)}).encode() + b"\n"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryFile() as stderr:
        child = subprocess.Popen(
            child_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            start_new_session=True,  # one process group: a timeout kills soffice too
        )
        try:
            out, _ = child.communicate(header + data, timeout=budget.timeout_seconds)
        except subprocess.TimeoutExpired:
            _kill_group(child)
            child.communicate()
            raise ParseTimeoutError(
                f"Reading this document took longer than {budget.timeout_seconds} seconds, the limit for one file."
            ) from None
        except BaseException:
            _kill_group(child)
            child.wait()
            raise
        _kill_group(child)  # nothing the child started may outlive it
        stderr.seek(0, os.SEEK_END)
        stderr.seek(max(0, stderr.tell() - _STDERR_TAIL))
        tail = stderr.read().decode("utf-8", "replace")
    return _answer(child.returncode, out, tail, budget)


def child_command() -> list[str]:
    """The command that runs one parse (tests replace it with one that hangs or crashes)."""
    return [sys.executable, "-m", "sluice.parsing.isolation"]


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)


def _answer(returncode: int, out: bytes, stderr_tail: str, budget: ParseBudget) -> ParsedDocument:
    try:
        answer = json.loads(out.decode("utf-8", "surrogatepass")) if out else None
    except ValueError:
        answer = None
    if returncode != 0 or not isinstance(answer, dict):
        log.warning("parse child failed (exit %s): %s", returncode, stderr_tail[-1000:])
        lowered = stderr_tail.lower()
        if "memoryerror" in lowered or "out of memory" in lowered or "cannot allocate" in lowered:
            raise ParseError(memory_sentence(budget.memory_mb))
        raise ParseError(_CRASH_SENTENCE)
    if "refused" in answer:
        refused = answer["refused"]
        cls = _refusal_classes().get(refused.get("class"), ParseError)
        raise cls(str(refused.get("message") or _CRASH_SENTENCE))
    return _document_from(answer["document"])


def _document_to(document: ParsedDocument) -> dict[str, Any]:
    return asdict(document)


def _document_from(raw: dict[str, Any]) -> ParsedDocument:
    pages = [PageText(**page) for page in raw["pages"]] if raw.get("pages") is not None else None
    members = None
    if raw.get("members") is not None:
        members = [
            ArchiveMember(
                path=m["path"],
                size=m["size"],
                kind=FileKind(**m["kind"]) if m.get("kind") else None,
                skipped_reason=m.get("skipped_reason"),
            )
            for m in raw["members"]
        ]
    return ParsedDocument(
        text=raw["text"],
        pages=pages,
        notes=list(raw.get("notes") or []),
        truncated=bool(raw.get("truncated")),
        members=members,
    )


def _limit_memory(memory_mb: int) -> None:
    import resource

    limit = memory_mb * 1024 * 1024
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError) as exc:  # a lower hard limit already in force wins
        log.info("could not set RLIMIT_AS: %s", exc)


def _skip_optional_imports() -> None:
    # PyMuPDF 2 imports its layout analyser and pymupdf4llm (onnxruntime, numpy) whenever
    # they are installed, and openpyxl imports numpy to recognise its number types: 0.5 s
    # and ~90 MB in every child, for features text extraction never uses. Marked absent,
    # the libraries' own guarded imports skip them.
    for optional in ("pymupdf.layout", "pymupdf4llm", "numpy"):
        sys.modules.setdefault(optional, None)  # type: ignore[arg-type]


def _child_main() -> None:
    # Libraries print; only the answer may reach the parent's pipe.
    answer_fd = os.dup(1)
    os.dup2(2, 1)
    raw = sys.stdin.buffer.read()
    newline = raw.index(b"\n")
    header = json.loads(raw[:newline])
    budget = ParseBudget(**header["budget"])
    kind = FileKind(**header["kind"])
    data = raw[newline + 1 :]
    del raw
    _limit_memory(budget.memory_mb)
    _skip_optional_imports()
    from sluice.parsing.extract import extract

    try:
        answer: dict[str, Any] = {"document": _document_to(extract(data, kind, budget))}
    except DocumentRefused as refused:
        answer = {"refused": {"class": type(refused).__name__, "message": refused.message}}
    except MemoryError:
        answer = {"refused": {"class": "ParseError", "message": memory_sentence(budget.memory_mb)}}
    del data
    payload = json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogatepass")
    with os.fdopen(answer_fd, "wb") as pipe:
        pipe.write(payload)


if __name__ == "__main__":
    _child_main()
