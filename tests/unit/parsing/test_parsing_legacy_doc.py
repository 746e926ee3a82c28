"""Legacy Word (.doc) through LibreOffice in the parse child: read for real, two at once, and
never a hang (SPEC §4, doc row; R-PARSE-5). The samples are generated .docx files converted by
LibreOffice itself; where it is absent these tests skip with a sentence saying so."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from parsing_samples import SOFFICE_ABSENT, budget, cfb_bytes, doc_bytes

from sluice.errors import ParseTimeoutError
from sluice.parsing import extract_isolated, legacy_word, sniff

FIRST = ["Hundreds injured in Yemen protest.", "Security forces fired on the crowd in the capital."]
SECOND = ["The on-call engineer rotates the signing keys every ninety days.", "Badges are grey."]

# One worker runs this module: LibreOffice converts its samples once.
pytestmark = pytest.mark.xdist_group("legacy_doc")


@pytest.fixture(scope="module")
def docs() -> list[bytes]:
    try:
        return doc_bytes([FIRST, SECOND])
    except LookupError:
        pytest.skip(SOFFICE_ABSENT)


def read(data: bytes) -> tuple[str, float, float]:
    started = time.monotonic()
    text = extract_isolated(data, sniff(data, "letter.doc"), budget(timeout_seconds=120)).text
    return text, started, time.monotonic()


def test_a_generated_doc_is_read_through_libreoffice_in_the_parse_child(docs: list[bytes]) -> None:
    assert sniff(docs[0], "letter.doc").kind == "doc"
    text, _, _ = read(docs[0])
    assert text.split("\n")[:2] == FIRST


def test_two_conversions_at_once_meet_on_no_profile_lock_and_both_finish(docs: list[bytes]) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        (first, a0, a1), (second, b0, b1) = pool.map(read, docs)
    assert max(a0, b0) < min(a1, b1), "the two conversions did not overlap"
    assert first.split("\n")[:2] == FIRST
    assert second.split("\n")[:2] == SECOND


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a killed orphan may wait as a zombie for a PID 1 that never reaps


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see which processes are left")
def test_a_conversion_that_hangs_is_stopped_at_its_limit_with_everything_it_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in for soffice that never finishes, and starts a process of its own the way the
    # launcher starts soffice.bin (which outlives a killed launcher).
    fake = tmp_path / "bin" / "soffice"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/launcher.pid\nsleep 300 &\necho $! > {tmp_path}/office.pid\n"
                    "wait\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    assert legacy_word.soffice_path() == str(fake)
    data = cfb_bytes({"WordDocument": b"\xec\xa5" + b"\0" * 4094})

    started = time.monotonic()
    with pytest.raises(ParseTimeoutError) as caught:
        legacy_word.read_doc(data, budget(timeout_seconds=6))

    assert time.monotonic() - started < 15
    assert caught.value.message == "Converting this .doc file took longer than 5 seconds, the limit for one file."
    pids = [int((tmp_path / name).read_text()) for name in ("launcher.pid", "office.pid")]
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in pids if _alive(pid)] == []
