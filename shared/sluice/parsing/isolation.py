"""Parsing in a child process with a time and memory limit (R-PARSE-5).

A parser that crashes, hangs or eats memory on one file must fail that file
only. ``extract_isolated`` runs ``extract`` in a fresh interpreter
(``python -m sluice.parsing.isolation``) and talks to it over stdin/stdout:
AWS Lambda has no ``/dev/shm``, so ``multiprocessing`` queues and pools (which
need POSIX semaphores) do not work there, while plain pipes do, and a fresh
interpreter is safe to start from a parent that runs threads (fork is not).

The child sees an allow-listed environment (no credentials, no database URL) and
limits its own address space, file size and process count before it reads a
byte. The parent waits ``timeout_seconds`` and then kills the child's whole
process group (a LibreOffice conversion runs in it, never in a group of its own). The child answers in JSON — never a
pickle, which would let a parser exploited in the child run code in the parent —
and a refusal comes back as the same DocumentRefused class with the same message.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sluice import errors
from sluice.errors import DocumentRefused, ParseError, ParseTimeoutError
from sluice.parsing.budget import ParseBudget, memory_sentence
from sluice.parsing.document import ArchiveMember, PageText, ParsedDocument
from sluice.parsing.images import ExtractedImage, ImageOptions, ImagePlacement
from sluice.parsing.kinds import FileKind
from sluice.parsing.ocr_engine import OcrEngine, PageCache, PageImage, Recognised
from sluice.parsing.options import ParserOptions
from sluice.parsing.render import RenderedPage, RenderedPages

log = logging.getLogger(__name__)

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
# The child's whole environment (plus PYTHONPATH): see child_environment.
_CHILD_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "LD_LIBRARY_PATH", "HOME", "SOFFICE_PATH",
                    "TESSDATA_PREFIX")
# The most one file the child writes may hold (soffice's converted text and its profile): far above
# any legitimate conversion of a 50 MB upload, far below the 2 GB of a Lambda's /tmp.
CHILD_MAX_FILE_BYTES = 256 * 1024 * 1024
# Processes the child's user may start beyond those it already has: soffice is a launcher and one
# office process; a parser that forks in a loop meets this instead of the machine's process table.
CHILD_EXTRA_PROCESSES = 16
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


def extract_isolated(data: bytes, kind: FileKind, budget: ParseBudget,
                     images: ImageOptions | None = None, parser: ParserOptions | None = None,
                     engine: OcrEngine | None = None, *, until: float | None = None,
                     recognised: PageCache | None = None) -> ParsedDocument:
    """``extract`` in the guarded child; ``images`` (image description on) collects a PDF's images too;
    ``parser`` (a collection's parser settings) with OCR on reads scanned pages through ``engine``.

    Tesseract runs in the child. Another engine (Textract) needs what the child must never see
    (credentials, the network), so the child renders the pages that need OCR first, this process has
    ``engine`` recognise them, and a second child reads the document with those answers.

    ``until`` (``time.monotonic()``) is the whole parse's deadline (issue 37): each child waits at most
    what is left of it (and at most the budget's seconds), and the engine was built with the same one.
    ``recognised`` keeps the pages the engine read, so a redelivered parse sends none of them again."""
    header: dict[str, Any] = {"kind": asdict(kind), "budget": asdict(budget)}
    if images is not None:
        header["images"] = asdict(images)
    if parser is not None:
        header["parser"] = asdict(parser)
        if parser.ocr_on and engine is not None:
            header["ocr_engine"] = engine.name
            if engine.name != "tesseract":
                header["recognised"] = _recognise_outside(data, header, budget, engine, parser, until, recognised)
    answer = _run_child(header, data, budget, until)
    return _document_from(answer["document"])


def _recognise_outside(data: bytes, header: dict[str, Any], budget: ParseBudget, engine: OcrEngine,
                       parser: ParserOptions, until: float | None, cache: PageCache | None) -> list[dict[str, Any]]:
    raw = _run_child({**header, "task": "ocr_pages"}, data, budget, until)["ocr_pages"]
    pages = [PageImage(number=int(p["number"]), png=base64.b64decode(p["png"]), dpi=int(p["dpi"])) for p in raw]
    known = cache.load() if cache is not None else {}
    to_send = [page for page in pages if page.number not in known]
    answers = {a.number: a for a in engine.recognise(to_send, parser.ocr_languages)} if to_send else {}
    read = {n: a.text for n, a in answers.items() if a.text is not None}
    if cache is not None and read:
        cache.keep({**known, **read})
    out: list[dict[str, Any]] = []
    for page in pages:
        if page.number in known:
            out.append({"number": page.number, "text": known[page.number], "error": None})
        else:
            a = answers[page.number]
            out.append({"number": a.number, "text": a.text, "error": a.error})
    return out


def render_isolated(data: bytes, kind: FileKind, budget: ParseBudget, *, max_pages: int, max_side: int,
                    max_bytes: int) -> RenderedPages:
    """``render_pages`` in the same guarded child as ``extract``: a crafted TIFF or PDF that
    crashes or hangs MuPDF fails this file only."""
    header = {"task": "render", "kind": asdict(kind), "budget": asdict(budget),
              "render": {"max_pages": max_pages, "max_side": max_side, "max_bytes": max_bytes}}
    return _pages_from(_run_child(header, data, budget)["pages"])


def _run_child(header_fields: dict[str, Any], data: bytes, budget: ParseBudget,
               until: float | None = None) -> dict[str, Any]:
    timeout: float = budget.timeout_seconds
    if until is not None:
        left = until - time.monotonic()
        if left <= 1:
            raise ParseTimeoutError(out_of_parse_time())
        timeout = min(timeout, left)
    header = json.dumps(header_fields).encode() + b"\n"
    env = child_environment()
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
            out, _ = child.communicate(header + data, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(child)
            child.communicate()
            if timeout < budget.timeout_seconds:
                raise ParseTimeoutError(out_of_parse_time()) from None
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


def out_of_parse_time() -> str:
    return ("Reading this document ran out of the time its parse had (the parse function's limit, less what "
            "is kept back to save the result); retry it, or split it into smaller files.")


def child_environment() -> dict[str, str]:
    """What the child may see of this process's environment: how to run, never what to reach.

    The child reads files anyone may upload; if one exploits a parser, it must
    find no AWS credentials, database URL or key in its environment. It gets
    the interpreter's search path (so the same packages and layers load), the
    locale, and the places to find programs and libraries (``soffice``).
    """
    env = {name: os.environ[name] for name in _CHILD_VARIABLES if name in os.environ}
    paths = [_PACKAGE_ROOT] + [p for p in sys.path if p and os.path.isdir(p)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def child_command() -> list[str]:
    """The command that runs one parse (tests replace it with one that hangs or crashes)."""
    return [sys.executable, "-m", "sluice.parsing.isolation"]


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)


def _answer(returncode: int, out: bytes, stderr_tail: str, budget: ParseBudget) -> dict[str, Any]:
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
    return answer


def _pages_to(rendered: RenderedPages) -> dict[str, Any]:
    return {"page_count": rendered.page_count, "left_out_by_cap": rendered.left_out_by_cap,
            "left_out_by_size": rendered.left_out_by_size,
            "pages": [{"number": p.number, "width": p.width, "height": p.height,
                       "png": base64.b64encode(p.png).decode()} for p in rendered.pages]}


def _pages_from(raw: dict[str, Any]) -> RenderedPages:
    return RenderedPages(
        page_count=int(raw["page_count"]), left_out_by_cap=int(raw["left_out_by_cap"]),
        left_out_by_size=int(raw["left_out_by_size"]),
        pages=[RenderedPage(number=int(p["number"]), width=int(p["width"]), height=int(p["height"]),
                            png=base64.b64decode(p["png"])) for p in raw["pages"]],
    )


def _document_to(document: ParsedDocument) -> dict[str, Any]:
    images = document.images
    document.images = None
    raw = asdict(document)
    if images is not None:
        # JSON carries no bytes: each image's data goes base64-encoded.
        raw["images"] = [{**asdict(i), "data": base64.b64encode(i.data).decode("ascii")} for i in images]
    return raw


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
    images = None
    if raw.get("images") is not None:
        images = [ExtractedImage(id=int(i["id"]), sha256=str(i["sha256"]), width=int(i["width"]),
                                 height=int(i["height"]), format=str(i["format"]), data=base64.b64decode(i["data"]))
                  for i in raw["images"]]
    placements = None
    if raw.get("placements") is not None:
        placements = [ImagePlacement(page=int(p["page"]), offset=int(p["offset"]), image=int(p["image"]))
                      for p in raw["placements"]]
    return ParsedDocument(
        text=raw["text"],
        pages=pages,
        notes=list(raw.get("notes") or []),
        truncated=bool(raw.get("truncated")),
        members=members,
        images=images,
        placements=placements,
        images_over_cap=int(raw.get("images_over_cap") or 0),
        images_unreadable=int(raw.get("images_unreadable") or 0),
        parser=raw.get("parser"),
        ocr_pages=None if raw.get("ocr_pages") is None else int(raw["ocr_pages"]),
    )


def limit_resources(memory_mb: int) -> None:
    """The child's own limits, set before it reads a byte: address space, file size, processes."""
    import resource

    _set_limit(resource.RLIMIT_AS, memory_mb * 1024 * 1024)
    _set_limit(resource.RLIMIT_FSIZE, CHILD_MAX_FILE_BYTES)
    # RLIMIT_NPROC counts every process of the user, so it is set above those already running.
    running = _processes_of_this_user()
    if running is not None:
        _set_limit(resource.RLIMIT_NPROC, running + CHILD_EXTRA_PROCESSES)


def _set_limit(which: int, value: int) -> None:
    import resource

    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)  # a lower hard limit already in force wins
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError) as exc:
        log.info("could not set resource limit %s: %s", which, exc)


def _processes_of_this_user() -> int | None:
    uid = os.getuid()
    try:
        entries = [e for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return None  # no /proc (macOS): the limit is left as it is
    count = 0
    for entry in entries:
        try:
            count += entry.stat().st_uid == uid
        except OSError:
            continue  # exited meanwhile
    return count


def _skip_optional_imports() -> None:
    # PyMuPDF 2 imports its layout analyser (onnxruntime, numpy) whenever it is installed, and
    # openpyxl imports numpy to recognise its number types: 0.5 s and ~90 MB in every child, for
    # features text extraction never uses. Marked absent, the libraries' own guarded imports skip
    # them. pymupdf4llm 0.3 (the ``layout`` parser) is imported only when asked for, and without
    # pymupdf.layout it keeps to its own heuristics.
    for optional in ("pymupdf.layout", "numpy"):
        sys.modules.setdefault(optional, None)  # type: ignore[arg-type]


def _run_task(header: dict[str, Any], data: bytes, kind: FileKind, budget: ParseBudget) -> dict[str, Any]:
    if header.get("task") == "render":
        from sluice.parsing.render import render_pages

        limits = header["render"]
        return {"pages": _pages_to(render_pages(data, kind, max_pages=int(limits["max_pages"]),
                                                max_side=int(limits["max_side"]),
                                                max_bytes=int(limits["max_bytes"])))}
    from sluice.parsing.extract import extract

    images = ImageOptions(**header["images"]) if header.get("images") else None
    parser = ParserOptions(**header["parser"]) if header.get("parser") else None
    engine = _child_engine(header)
    if header.get("task") == "ocr_pages":
        from sluice.parsing.ocr import RecordingEngine

        assert isinstance(engine, RecordingEngine)
        with contextlib.suppress(DocumentRefused):  # a scan reads as empty until its pages are recognised
            extract(data, kind, budget, None, parser, engine)
        return {"ocr_pages": [{"number": p.number, "dpi": p.dpi, "png": base64.b64encode(p.png).decode()}
                              for p in engine.pages]}
    return {"document": _document_to(extract(data, kind, budget, images, parser, engine))}


def _child_engine(header: dict[str, Any]) -> OcrEngine | None:
    """The engine the child reads through: Tesseract itself, or the parent's answers for another."""
    from sluice.parsing.ocr import PrecomputedEngine, RecordingEngine, TesseractEngine

    name = header.get("ocr_engine")
    if name is None:
        return None
    if name == "tesseract":
        return TesseractEngine()
    if header.get("task") == "ocr_pages":
        return RecordingEngine(str(name))
    answers = {int(a["number"]): Recognised(number=int(a["number"]), text=a.get("text"), error=a.get("error"))
               for a in header.get("recognised") or []}
    return PrecomputedEngine(str(name), answers)


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
    limit_resources(budget.memory_mb)
    _skip_optional_imports()
    try:
        answer: dict[str, Any] = _run_task(header, data, kind, budget)
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
