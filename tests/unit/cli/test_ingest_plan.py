"""`sluice ingest` without a server: which files it takes, how it sends each, what it leaves out,
and how it meets a 429 or the kill switch (the API is an outside system here, answered by
httpx's MockTransport; the same paths run against the real local stack in
tests/e2e/test_ingest_cli.py)."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import httpx
import pytest

from sluice.cli.ingest import Api, Halted, Known, LocalFile, Refused, collect, plan, progress_for
from sluice.storage import display_name

EXTENSIONS = [".pdf", ".txt", ".md", ".tar.gz", ".docx"]


def write(root: Path, rel: str, data: bytes = b"some words") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def local(name: str, data: bytes) -> LocalFile:
    return LocalFile(Path("/data") / name, name, len(data), hashlib.sha256(data).hexdigest())


def known(doc_id: str, data: bytes | None, status: str, *, name: str = "x.txt", size: int | None = None) -> Known:
    return Known(id=doc_id, filename=name, filesize=size if size is not None else len(data or b""), status=status,
                 content_hash=hashlib.sha256(data).hexdigest() if data is not None else None,
                 error_message="It broke." if status == "error" else None, has_file=False)


def test_a_folder_is_read_recursively_and_what_is_left_out_says_why(tmp_path):
    write(tmp_path, "a.pdf", b"%PDF-1.4 one")
    write(tmp_path, "notes/deep/b.md", b"# notes")
    write(tmp_path, "bundle.tar.gz", b"\x1f\x8b bundle")
    write(tmp_path, ".env", b"SECRET=1")
    write(tmp_path, ".git/config", b"[core]")
    write(tmp_path, "notes/.draft.txt", b"draft")
    write(tmp_path, "tool.exe", b"MZ")
    write(tmp_path, "README", b"no extension")
    write(tmp_path, "empty.txt", b"")
    (tmp_path / "loop").symlink_to(tmp_path, target_is_directory=True)

    files, skipped = collect(tmp_path, EXTENSIONS)

    assert sorted(f.shown for f in files) == ["a.pdf", "bundle.tar.gz", "notes/deep/b.md"]
    assert {f.shown: f.sha256 for f in files}["a.pdf"] == hashlib.sha256(b"%PDF-1.4 one").hexdigest()
    assert {f.shown: f.size for f in files}["notes/deep/b.md"] == len(b"# notes")
    reasons = {s.shown: s.reason for s in skipped}
    assert reasons == {
        ".env": "hidden file",
        ".git/": "hidden folder",
        "notes/.draft.txt": "hidden file",
        "tool.exe": "unsupported extension (.exe): a knowledge base does not index it",
        "README": "no extension: a knowledge base does not index it",
        "empty.txt": "empty file",
        "loop/": "symbolic link to a folder: not followed",
    }


def test_a_file_named_on_the_command_line_is_taken_even_if_hidden(tmp_path):
    path = write(tmp_path, ".notes.md", b"# mine")
    files, skipped = collect(path, EXTENSIONS)
    assert [f.shown for f in files] == [".notes.md"] and skipped == []


def test_a_missing_path_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        collect(tmp_path / "absent", EXTENSIONS)


def test_direct_up_to_the_limit_and_presigned_above_it():
    at, over, small = local("at.pdf", b"x" * 100), local("over.pdf", b"y" * 101), local("small.txt", b"z")
    p = plan([at, over, small], [], direct_limit=100)
    assert p.direct == [at, small]
    assert p.presigned == [over]
    assert p.present == [] and p.failed_before == [] and p.skipped == []


def test_content_the_base_holds_is_not_sent_again_whatever_its_name():
    done, failed, fresh = b"indexed already", b"failed already", b"new content"
    files = [local("renamed.txt", done), local("broken.pdf", failed), local("new.txt", fresh)]
    base = [known("d1", done, "done", name="original.txt"), known("d2", failed, "error", name="broken.pdf")]

    p = plan(files, base, direct_limit=1000)

    assert [(f.name, k.id) for f, k in p.present] == [("renamed.txt", "d1")]
    assert [(f.name, k.id) for f, k in p.failed_before] == [("broken.pdf", "d2")]
    assert [f.name for f in p.direct] == ["new.txt"] and p.presigned == []


def test_of_two_documents_with_one_content_the_indexed_one_answers():
    data = b"twice in the base"
    p = plan([local("a.txt", data)], [known("bad", data, "error"), known("good", data, "done")], direct_limit=1000)
    assert [k.id for _, k in p.present] == ["good"] and p.failed_before == []


def test_a_queued_document_not_read_yet_matches_by_its_listed_name_and_size():
    # The hash comes with the parse stage; a run started again while the last one's files wait
    # in the queue must not send them twice.
    data = b"waiting in the queue"
    queued = known("q1", None, "processing", name="report.txt", size=len(data))
    other_size = known("q2", None, "processing", name="other.txt", size=len(data) + 1)
    files = [local("dir/report\u202e.txt", data), local("other.txt", data + b"!!")]
    p = plan(files, [queued, other_size], direct_limit=1000, display_name=display_name)
    assert [(f.name, k.id) for f, k in p.present] == [("report\u202e.txt", "q1")]
    assert [f.name for f in p.direct] == ["other.txt"]


def test_the_same_content_twice_in_the_folder_is_sent_once():
    a, b = local("a.txt", b"same"), local("copy/a.txt", b"same")
    p = plan([a, b], [], direct_limit=1000)
    assert p.direct == [a]
    assert [(s.shown, s.reason) for s in p.skipped] == [("copy/a.txt", "same content as a.txt")]


# --- 429 and the kill switch ----------------------------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def api_answering(answers: list[httpx.Response], seen: list[httpx.Request], clock: Clock, max_wait: float = 60,
                  said: list[str] | None = None) -> Api:
    def handle(request: httpx.Request) -> httpx.Response:
        request.read()
        seen.append(request)
        return answers.pop(0)

    client = httpx.Client(base_url="http://api.test", transport=httpx.MockTransport(handle))
    return Api(client, (said if said is not None else []).append, max_wait=max_wait, sleep=clock.sleep,
               clock=lambda: clock.now)


def limited(after: str) -> httpx.Response:
    return httpx.Response(429, headers={"Retry-After": after}, json={
        "error": {"code": "RATE_LIMIT_EXCEEDED", "message": "Too many uploads.", "details": {"retry_after": 7}}})


def test_a_429_waits_out_retry_after_then_sends_the_whole_request_again():
    seen: list[httpx.Request] = []
    clock, said = Clock(), []
    api = api_answering([limited("3"), httpx.Response(202, json={"id": "d1"})], seen, clock, said=said)

    body = api.call("POST", "/kb/k/documents", files={"file": ("a.txt", b"the whole file")})

    assert body == {"id": "d1"}
    assert clock.slept == [3.0]
    assert len(seen) == 2
    assert all(b'filename="a.txt"\r\n' in r.content and b"\r\n\r\nthe whole file\r\n--" in r.content for r in seen)
    assert said == ["rate limited by the server: waiting 3 s (Retry-After) before sending more"]


def test_a_wait_longer_than_max_wait_stops_the_run_with_the_servers_sentence():
    clock = Clock()
    api = api_answering([limited("3600")], [], clock, max_wait=300)
    with pytest.raises(Halted) as stopped:
        api.call("POST", "/kb/k/uploads", json={"filename": "a.pdf"})
    assert str(stopped.value) == ("Too many uploads. The server asks to wait 3600 s, more than --max-wait (300 s).")
    assert clock.slept == []


def test_the_kill_switch_stops_the_run_and_other_errors_refuse_one_file():
    clock = Clock()
    paused = httpx.Response(503, json={"error": {"code": "INDEXING_PAUSED", "details": {},
                                                 "message": "Indexing is paused by the operator."}})
    api = api_answering([paused, httpx.Response(413, json={"error": {
        "code": "FILE_TOO_LARGE", "message": "Too big.", "details": {"limit_bytes": 10}}})], [], clock)
    with pytest.raises(Halted, match="^Indexing is paused by the operator.$"):
        api.call("POST", "/kb/k/documents")
    with pytest.raises(Refused) as refused:
        api.call("POST", "/kb/k/documents")
    assert (refused.value.status, refused.value.code, refused.value.details) == (413, "FILE_TOO_LARGE",
                                                                                 {"limit_bytes": 10})


# --- output ----------------------------------------------------------------------------------

class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_progress_bar_and_anything_else_plain_lines():
    plain = io.StringIO()
    progress = progress_for(plain)
    with progress.step("Uploading", 2) as advance:
        progress.line("sent      a.pdf (direct)")
        advance()
    assert plain.getvalue() == "Uploading: 2\nsent      a.pdf (direct)\n"

    terminal = Terminal()
    progress = progress_for(terminal)
    with progress.step("Indexing", 1) as advance:
        progress.line("done      a.pdf: 3 chunk(s)")
        advance()
    shown = terminal.getvalue()
    assert "done      a.pdf: 3 chunk(s)" in shown and "1/1" in shown and "Indexing" in shown
