"""A remote name is a label (R-SYNC-4): reduced to its final component, and the place it is written
resolved and confirmed inside the working directory; a name that is no component is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.sync.remote_names import RemoteNameRefused, destination, remote_name


@pytest.mark.parametrize(("key", "name"), [
    ("../../../../home/app/.ssh/authorized_keys", "authorized_keys"),
    ("../../x", "x"),
    ("folder\\..\\..\\evil.md", "evil.md"),
    ("a/b/c/report 2024.pdf", "report 2024.pdf"),
    ("plain.md", "plain.md"),
    ("..%2F..%2Fx", "..%2F..%2Fx"),  # an encoding is just characters of one name
])
def test_a_name_is_its_final_component(key, name):
    assert remote_name(key) == name


@pytest.mark.parametrize("key", ["..", ".", "/", "", "dir/", "a/..", "b\\.", "x/\x00"])
def test_a_name_that_is_no_file_name_is_refused(key):
    with pytest.raises(RemoteNameRefused, match="was not synced"):
        remote_name(key)


def test_the_destination_is_a_child_of_the_working_directory(tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    target = destination(work, "../../etc/passwd")
    assert target.parent == work.resolve() and target.name == "passwd"
    assert destination(work, "a/readme.md") == destination(work, "b/readme.md")  # hence a directory per file


def test_a_symlink_already_in_the_directory_is_refused(tmp_path: Path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    os.symlink(outside / "stolen.md", work / "stolen.md")
    with pytest.raises(RemoteNameRefused, match="outside the run's working directory"):
        destination(work, "x/stolen.md")


@given(st.text(min_size=1, max_size=80))
def test_any_key_lands_inside_or_is_refused(tmp_path_factory, key):
    work = tmp_path_factory.getbasetemp() / "names"
    work.mkdir(exist_ok=True)
    try:
        target = destination(work, key)
    except RemoteNameRefused:
        return
    assert target.parent == work.resolve()
