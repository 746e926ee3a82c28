"""A parser that crashes, hangs or runs out of memory fails its document only (R-PARSE-5)."""

from __future__ import annotations

import json
import sys
import time

import pytest
from parsing_samples import budget, image_only_pdf, pdf_bytes

from sluice.errors import ParseError, ParseTimeoutError, ScannedPdfError, UnsupportedTypeError
from sluice.parsing import extract_isolated, isolation, sniff


def test_a_document_is_read_in_the_child_with_its_pages() -> None:
    data = pdf_bytes(["first page", "second page"])
    document = extract_isolated(data, sniff(data, "a.pdf"), budget())
    assert [p.number for p in document.pages] == [1, 2]
    assert document.text[document.pages[1].start : document.pages[1].end] == "second page"


def test_a_refusal_in_the_child_comes_back_as_the_same_class_and_sentence() -> None:
    data = image_only_pdf(pages=1)
    with pytest.raises(ScannedPdfError) as caught:
        extract_isolated(data, sniff(data, "scan.pdf"), budget())
    assert caught.value.message == "Scanned PDF — 1 page found but no text could be extracted"


def test_a_child_that_hangs_is_killed_at_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "child_command", lambda: [sys.executable, "-c", "import time; time.sleep(60)"])
    started = time.monotonic()
    with pytest.raises(ParseTimeoutError) as caught:
        extract_isolated(b"hello", sniff(b"hello", "a.txt"), budget(timeout_seconds=1))
    assert time.monotonic() - started < 5
    assert caught.value.message == "Reading this document took longer than 1 seconds, the limit for one file."
    assert caught.value.code == "PARSE_TIMEOUT"


def test_a_child_that_crashes_fails_the_document_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    segfault = "import ctypes, sys; sys.stdin.buffer.read(); ctypes.string_at(0)"
    monkeypatch.setattr(isolation, "child_command", lambda: [sys.executable, "-c", segfault])
    with pytest.raises(ParseError) as caught:
        extract_isolated(b"hello", sniff(b"hello", "a.txt"), budget())
    assert caught.value.message == "This document could not be read: the reader stopped unexpectedly on it."


def test_a_child_answering_garbage_is_a_crash_not_a_document(monkeypatch: pytest.MonkeyPatch) -> None:
    liar = "import sys; sys.stdin.buffer.read(); print('{not json')"
    monkeypatch.setattr(isolation, "child_command", lambda: [sys.executable, "-c", liar])
    with pytest.raises(ParseError, match="stopped unexpectedly"):
        extract_isolated(b"hello", sniff(b"hello", "a.txt"), budget())


def test_a_child_cannot_name_an_exception_class_outside_the_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    answer = '{"refused": {"class": "SystemExit", "message": "Nope, not a refusal class."}}'
    script = f"import sys; sys.stdin.buffer.read(); sys.stdout.write({answer!r})"
    monkeypatch.setattr(isolation, "child_command", lambda: [sys.executable, "-c", script])
    with pytest.raises(ParseError, match="Nope"):
        extract_isolated(b"hello", sniff(b"hello", "a.txt"), budget())


def test_a_document_that_needs_more_memory_than_allowed_fails_with_that_reason() -> None:
    data = ("many words of text " * 3_000_000).encode()  # 57 MB: the bytes and their decoded text exceed 100 MB
    with pytest.raises(ParseError) as caught:
        extract_isolated(data, sniff(data, "big.txt"), budget(memory_mb=100))
    assert caught.value.message == "This document needs more memory to read than Sluice allows for one file (100 MB)."


def test_an_unsupported_file_never_reaches_a_child() -> None:
    with pytest.raises(UnsupportedTypeError):
        sniff(b"MZ\x00\x00" * 100, "setup.pdf")


def test_the_child_sees_no_credentials_or_database_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-key")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-token")
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:p@db/sluice")
    monkeypatch.setenv("SLUICE_DEV_JWT_SECRET", "jwt")
    tell = ("import json, os, sys; sys.stdin.buffer.read(); names = json.dumps(sorted(os.environ)); "
            "sys.stdout.write(json.dumps({'refused': {'class': 'ParseError', 'message': names}}))")
    monkeypatch.setattr(isolation, "child_command", lambda: [sys.executable, "-c", tell])
    with pytest.raises(ParseError) as caught:
        extract_isolated(b"hello", sniff(b"hello", "a.txt"), budget())
    seen = set(json.loads(caught.value.message))
    assert "PYTHONPATH" in seen and "PATH" in seen
    assert not seen & {"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "DATABASE_URL", "SLUICE_DEV_JWT_SECRET"}
    assert seen <= set(isolation._CHILD_VARIABLES) | {"PYTHONPATH"}


def test_the_child_limits_its_file_size_and_processes() -> None:
    import subprocess

    script = ("import resource; from sluice.parsing.isolation import limit_resources; limit_resources(512); "
              "print(resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_FSIZE)[0], "
              "resource.getrlimit(resource.RLIMIT_NPROC)[0])")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env=isolation.child_environment()).stdout.split()
    address_space, file_size, processes = (int(v) for v in out)
    assert address_space == 512 * 1024 * 1024
    assert file_size == isolation.CHILD_MAX_FILE_BYTES
    running = isolation._processes_of_this_user()
    assert running is not None and 0 < processes - running <= isolation.CHILD_EXTRA_PROCESSES + 5

