"""Where a .doc finds LibreOffice: SOFFICE_PATH, PATH, and what a Lambda layer leaves under /opt.

A shell script stands in for soffice: it writes the text file LibreOffice would, so each test is
about where the program was found, not about LibreOffice itself.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import tempfile
from pathlib import Path

import brotli
import pytest
from parsing_samples import budget, cfb_bytes

from sluice.errors import ParseError
from sluice.parsing import legacy_word, soffice
from sluice.parsing.isolation import child_environment

FAKE_SOFFICE = """#!/bin/sh
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--outdir" ]; then out="$2"; shift; fi
  shift
done
printf '%s\\n' "Converted by LibreOffice at $0" > "$out/document.txt"
"""
DOC = cfb_bytes({"WordDocument": b"\xec\xa5" + b"\0" * 4094})


@pytest.fixture(autouse=True)
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No LibreOffice on PATH, an empty /opt, and a temporary directory of the test's own."""
    empty_bin, opt, scratch = tmp_path / "bin", tmp_path / "opt", tmp_path / "tmp"
    for folder in (empty_bin, opt, scratch):
        folder.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    monkeypatch.delenv(soffice.SOFFICE_PATH_ENV, raising=False)
    monkeypatch.setattr(soffice, "LAYER_ROOT", opt)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return tmp_path


def program(folder: Path, name: str = "soffice") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE_SOFFICE)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def installation_tar(root: str = "instdir", name: str = "soffice") -> bytes:
    """A LibreOffice archive as the Lambda layers ship it: ``instdir/program/soffice`` and a library."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for member, content, mode in ((f"{root}/program/{name}", FAKE_SOFFICE.encode(), 0o755),
                                      (f"{root}/program/libmergedlo.so", b"\0" * 1024, 0o644)):
            info = tarfile.TarInfo(member)
            info.size, info.mode = len(content), mode
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def converted_by(expected: Path) -> None:
    document = legacy_word.read_doc(DOC, budget(timeout_seconds=30))
    assert document.text.strip().startswith("Converted by LibreOffice at ")
    assert Path(document.text.strip().rsplit(" at ", 1)[1]).resolve() == expected.resolve()


def test_soffice_path_names_the_program(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a program outside PATH, named by SOFFICE_PATH
    fake = program(nowhere / "elsewhere" / "program")
    monkeypatch.setenv("SOFFICE_PATH", str(fake))
    # THEN a .doc is converted by it
    converted_by(fake)


def test_soffice_path_names_an_archive_unpacked_once(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN SOFFICE_PATH naming a gzip LibreOffice archive
    archive = nowhere / "layer" / "lo.tar.gz"
    archive.parent.mkdir()
    import gzip

    archive.write_bytes(gzip.compress(installation_tar()))
    monkeypatch.setenv("SOFFICE_PATH", str(archive))

    # WHEN two .doc files are read
    first = soffice.find_soffice()
    converted_by(Path(str(first)))
    second = soffice.find_soffice()

    # THEN the archive was unpacked once, into the temporary directory, and its program ran
    assert first == second and first is not None
    unpacked = [p for p in (nowhere / "tmp").iterdir() if p.name.startswith("sluice-libreoffice-")]
    assert len(unpacked) == 1
    assert Path(first) == unpacked[0] / "instdir" / "program" / "soffice"


def test_a_layer_brotli_archive_under_opt_is_found_without_configuration(nowhere: Path) -> None:
    # GIVEN what the widely used LibreOffice layers leave: /opt/lo.tar.br, nothing on PATH
    (nowhere / "opt" / "lo.tar.br").write_bytes(brotli.compress(installation_tar(name="soffice.bin")))
    # THEN soffice.bin inside it converts the .doc
    found = soffice.find_soffice()
    assert found is not None and found.endswith("instdir/program/soffice.bin")
    converted_by(Path(found))


def test_an_unpacked_layer_under_opt_is_found(nowhere: Path) -> None:
    fake = program(nowhere / "opt" / "libreoffice24.8" / "program")
    assert soffice.find_soffice() == str(fake)
    converted_by(fake)


def test_path_comes_before_the_layer(nowhere: Path) -> None:
    on_path = program(nowhere / "bin")
    program(nowhere / "opt" / "instdir" / "program")
    assert soffice.find_soffice() == str(on_path)


def test_without_libreoffice_the_sentence_names_the_stack_parameter() -> None:
    assert soffice.find_soffice() is None
    with pytest.raises(ParseError) as caught:
        legacy_word.read_doc(DOC, budget())
    assert "LibreOfficeLayerArn" in caught.value.message and "Save it as .docx" in caught.value.message


@pytest.mark.parametrize("target", ["missing", "not-executable", "empty-folder"])
def test_a_soffice_path_that_names_no_program_fails_naming_the_setting(
    nowhere: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    # GIVEN LibreOffice on PATH, but SOFFICE_PATH naming something that is not a program
    program(nowhere / "bin")
    path = nowhere / target
    if target == "not-executable":
        path.write_text(FAKE_SOFFICE)
    elif target == "empty-folder":
        path.mkdir()
    monkeypatch.setenv("SOFFICE_PATH", str(path))
    # THEN the document fails with a sentence naming the setting (the operator's mistake is not hidden)
    with pytest.raises(ParseError) as caught:
        legacy_word.read_doc(DOC, budget())
    assert "SOFFICE_PATH" in caught.value.message


def test_a_corrupt_layer_archive_fails_with_a_sentence(nowhere: Path) -> None:
    (nowhere / "opt" / "lo.tar.br").write_bytes(b"not brotli at all" * 100)
    with pytest.raises(ParseError) as caught:
        soffice.find_soffice()
    assert "could not be unpacked" in caught.value.message
    assert not [p for p in (nowhere / "tmp").iterdir() if p.name.startswith("sluice-libreoffice-")]


def test_an_archive_cannot_write_outside_its_folder(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    archive = nowhere / "lo.tar"
    archive.write_bytes(buffer.getvalue())
    monkeypatch.setenv("SOFFICE_PATH", str(archive))
    with pytest.raises(ParseError):
        soffice.find_soffice()
    assert not (nowhere / "escaped").exists() and not (nowhere / "tmp" / "escaped").exists()


def test_the_parse_child_sees_soffice_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOFFICE_PATH", "/opt/libreoffice/program/soffice")
    monkeypatch.setenv("DATABASE_URL", "postgresql://secret")
    env = child_environment()
    assert env["SOFFICE_PATH"] == "/opt/libreoffice/program/soffice"
    assert "DATABASE_URL" not in env
    assert os.environ["SOFFICE_PATH"] == env["SOFFICE_PATH"]
