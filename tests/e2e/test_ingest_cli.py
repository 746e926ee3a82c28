"""`sluice ingest PATH --kb ID` against the whole local stack (R-OPS-2): a folder of generated samples
sent direct and presigned, followed to done or error, failures in a table, a second run that sends
nothing, the kill switch and the rate limit as a user meets them."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import boto3
import httpx
import pytest

from sluice.cli import build_parser
from sluice.cli.ingest import run
from sluice.config import reset_settings
from tests.e2e.test_upload_to_search import new_base, search
from tests.unit.parsing.parsing_samples import docx_bytes, pdf_bytes, sample_for

pytestmark = pytest.mark.e2e

CORRUPT_PDF = b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n" + b"\x00garbage" * 64


@pytest.fixture
def limits(monkeypatch):
    """Change settings of the in-process runtime for one test."""

    def apply(**values: str) -> None:
        for k, v in values.items():
            monkeypatch.setenv(k, v)
        reset_settings()

    yield apply
    monkeypatch.undo()
    reset_settings()


def ingest(*argv: str) -> tuple[int, str]:
    out = io.StringIO()  # not a terminal: the plain lines
    code = run(build_parser().parse_args(["ingest", *argv]), out=out)
    return code, out.getvalue()


def documents(api: httpx.Client, kb: dict) -> dict[str, dict]:
    listed = api.get(f"/kb/{kb['id']}/documents", params={"limit": 200}).json()["documents"]
    return {d["filename"]: d for d in listed}


def sample_folder(root: Path) -> dict[str, bytes]:
    sent = {
        "policy.pdf": pdf_bytes(["The on-call engineer rotates the signing keys every ninety days."]),
        "memo.docx": docx_bytes(["Badges are grey and are renewed every year at the front desk."]),
        "notes/keys.md": sample_for(".md"),
        "notes/deep/sheet.xlsx": sample_for(".xlsx"),
        "broken.pdf": CORRUPT_PDF,
        # Many pages: larger than the lowered direct limit below, so it goes presigned.
        "big.pdf": pdf_bytes([f"Page {i}: the archive room opens at nine and closes at five." for i in range(150)]),
    }
    for rel, data in {**sent, ".hidden.md": b"# not me", ".git/config": b"[core]", "tool.exe": b"MZ\x90\x00",
                      "empty.txt": b""}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return sent


def test_a_folder_is_sent_followed_and_a_second_run_sends_nothing(runtime, client_for, limits, tmp_path):
    limits(UPLOAD_RATE_PER_MINUTE="100")
    user = f"ingest_{uuid.uuid4().hex[:6]}"
    api = client_for(user)
    kb = new_base(api)
    sent = sample_folder(tmp_path)
    direct_limit = max(len(data) for name, data in sent.items() if name != "big.pdf")
    assert len(sent["big.pdf"]) > direct_limit
    # No --token: minted from the runtime's data directory, as `sluice local token` does.
    args = [str(tmp_path), "--kb", kb["id"], "--api", runtime.api_url, "--data-dir", str(runtime.data_dir),
            "--user", user, "--direct-limit", str(direct_limit)]

    code, out = ingest(*args)

    assert code == 1, out  # broken.pdf failed
    assert "sent      big.pdf (presigned)" in out
    assert "sent      notes/deep/sheet.xlsx (direct)" in out
    docs = documents(api, kb)
    assert sorted(docs) == sorted(Path(rel).name for rel in sent), out
    assert {name: d["status"] for name, d in docs.items()} == {
        "policy.pdf": "done", "memo.docx": "done", "keys.md": "done", "sheet.xlsx": "done", "big.pdf": "done",
        "broken.pdf": "error"}
    reason = docs["broken.pdf"]["error_message"]
    assert reason
    failures = out.split("\nFailures:\n")[1].split("\n\nSummary:")[0]
    assert failures.splitlines()[2].startswith("broken.pdf") and " ".join(failures.split()).count("broken.pdf") == 1
    assert " ".join(reason.split()) in " ".join(failures.split())
    skipped = out.split("\nSkipped:\n")[1].split("\n\nFailures:")[0]
    for name, why in ((".hidden.md", "hidden file"), (".git/", "hidden folder"), ("empty.txt", "empty file"),
                      ("tool.exe", "unsupported extension (.exe)")):
        assert any(line.startswith(name) and why in line for line in skipped.splitlines()), (name, skipped)
    assert "Summary: 6 uploaded (5 direct, 1 presigned), 4 skipped (see above)." in out
    assert "Indexed: 5 done, 1 failed." in out
    assert any("archive room opens at nine" in r["content"]
               for r in search(api, kb["collection_name"], "When does the archive room open?"))

    # A second run sends nothing: every file's content is in the base (the failed one says so).
    code, out = ingest(*args)
    assert code == 1, out
    assert "Summary: 0 uploaded, 6 skipped as already in the base with the same content (1 of them failed " \
           "earlier), 4 skipped (see above)." in out
    assert "failed earlier (--retry-failed sends it again)" in out and "sent " not in out
    assert documents(api, kb).keys() == docs.keys() and len(api.get(
        f"/kb/{kb['id']}/documents").json()["documents"]) == 6

    # Without the broken file, the folder is all in the base: nothing sent, exit 0.
    (tmp_path / "broken.pdf").unlink()
    code, out = ingest(*args)
    assert code == 0, out
    assert "Summary: 0 uploaded, 5 skipped as already in the base with the same content, 4 skipped (see above)." \
           in out


def test_retry_failed_runs_a_failed_file_again_in_place_or_sends_it_again(runtime, client_for, tmp_path, make_token):
    user = f"retry_{uuid.uuid4().hex[:6]}"
    api = client_for(user)
    kb = new_base(api)
    (tmp_path / "broken.pdf").write_bytes(CORRUPT_PDF)
    args = [str(tmp_path), "--kb", kb["id"], "--api", runtime.api_url, "--token", make_token(user)]
    assert ingest(*args)[0] == 1
    first = documents(api, kb)["broken.pdf"]
    assert first["status"] == "error" and first["attempt"] == 1
    s3 = boto3.client("s3", endpoint_url=runtime.moto_url, region_name="us-east-1")

    # A failed document whose original is still stored (a file that could not be read is kept; one
    # refused as what it is is not) runs again in place.
    assert first["has_file"] is True
    code, out = ingest(*args, "--retry-failed")
    assert code == 1, out  # the same bytes fail the same way
    again = documents(api, kb)
    assert list(again) == ["broken.pdf"]
    assert (again["broken.pdf"]["id"], again["broken.pdf"]["attempt"]) == (first["id"], 2)
    assert again["broken.pdf"]["status"] == "error"
    assert "Summary: 0 uploaded, 1 retried." in out

    # Its original is gone (removed behind Sluice's back, so the retry is refused): the file is sent
    # again, and the failed document makes way.
    s3.delete_object(Bucket=runtime.bucket, Key=first["storage_path"])
    code, out = ingest(*args, "--retry-failed")
    assert code == 1, out
    third = documents(api, kb)
    assert list(third) == ["broken.pdf"] and third["broken.pdf"]["id"] != first["id"]
    assert third["broken.pdf"]["status"] == "error"
    assert api.get(f"/rag/documents/{first['id']}").status_code == 404
    assert "Summary: 1 uploaded (1 direct, 0 presigned)." in out


def test_the_kill_switch_stops_the_run_with_a_sentence_and_sends_nothing(runtime, client_for, limits,
                                                                         tmp_path, make_token):
    user = f"paused_{uuid.uuid4().hex[:6]}"
    api = client_for(user)
    kb = new_base(api)
    for i in range(3):
        (tmp_path / f"n{i}.md").write_bytes(f"# Note {i}\n\nThe lift is serviced on day {i}.\n".encode())
    limits(INDEXING_PAUSED="true")

    code, out = ingest(str(tmp_path), "--kb", kb["id"], "--api", runtime.api_url, "--token", make_token(user),
                       "--concurrency", "1")

    assert code == 1
    assert "stopped: Indexing is paused by the operator; search keeps working. Try again later." in out
    assert "Not sent: 3 file(s)" in out
    assert documents(api, kb) == {}


def test_a_rate_limit_longer_than_max_wait_stops_the_run_and_says_how_long(runtime, client_for, limits,
                                                                         tmp_path, make_token):
    limits(UPLOAD_RATE_PER_MINUTE="2")
    user = f"busy_{uuid.uuid4().hex[:6]}"
    api = client_for(user)
    kb = new_base(api)
    for i in range(4):
        (tmp_path / f"n{i}.md").write_bytes(f"# Note {i}\n\nThe lift is serviced on day {i}.\n".encode())

    code, out = ingest(str(tmp_path), "--kb", kb["id"], "--api", runtime.api_url, "--token", make_token(user),
                       "--concurrency", "1", "--max-wait", "0", "--no-follow")

    assert code == 1
    assert "Summary: 2 uploaded (2 direct, 0 presigned)." in out
    assert "Not sent: 2 file(s): Too many uploads" in out and "more than --max-wait (0 s)" in out
    assert len(documents(api, kb)) == 2


def test_a_base_the_caller_cannot_reach_is_refused_before_anything_is_sent(runtime, client_for, tmp_path,
                                                                         make_token, capsys):
    kb = new_base(client_for(f"owner_{uuid.uuid4().hex[:6]}"))
    (tmp_path / "a.md").write_bytes(b"# a")
    code, out = ingest(str(tmp_path), "--kb", kb["id"], "--api", runtime.api_url, "--token", make_token("stranger"))
    assert code == 1 and out == ""
    assert capsys.readouterr().err == f"{runtime.api_url}: Collection not found\n"


def test_no_api_listening_says_so(tmp_path, capsys):
    (tmp_path / "a.md").write_bytes(b"# a")
    from sluice.local.runtime import free_port

    url = f"http://127.0.0.1:{free_port()}"
    code, _ = ingest(str(tmp_path), "--kb", str(uuid.uuid4()), "--api", url, "--token", "t")
    assert code == 2
    assert capsys.readouterr().err.startswith(f"No Sluice API answers at {url}: ")


def test_a_run_started_again_before_the_last_one_finished_sends_nothing_twice(runtime, client_for, tmp_path,
                                                                             make_token):
    user = f"again_{uuid.uuid4().hex[:6]}"
    api = client_for(user)
    kb = new_base(api)
    for i in range(3):
        (tmp_path / f"n{i}.md").write_bytes(f"# Note {i}\n\nThe boiler is checked in week {i}.\n".encode())
    args = [str(tmp_path), "--kb", kb["id"], "--api", runtime.api_url, "--token", make_token(user)]
    code, out = ingest(*args, "--no-follow")
    assert code == 0 and "Summary: 3 uploaded (3 direct, 0 presigned)." in out

    # Whether still queued (no hash yet: matched by name and size) or read already (by hash).
    code, out = ingest(*args)

    assert code == 0, out
    assert "Summary: 0 uploaded, 3 skipped as already in the base with the same content." in out
    assert {d["status"] for d in documents(api, kb).values()} == {"done"} and len(documents(api, kb)) == 3
