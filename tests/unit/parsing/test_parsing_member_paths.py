"""Property tests for the archive member path rule (R-ARC-1): a path the checker accepts
stays inside the folder it is unpacked into, on Unix and on Windows alike."""

from __future__ import annotations

import ntpath
import posixpath

from hypothesis import example, given
from hypothesis import strategies as st

from sluice.parsing import is_safe_member_path

# Path segments as archives carry them: anything but the separators, including unicode,
# dots, spaces and colons.
segment = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\\"), min_size=1, max_size=12
)
plain_segment = segment.filter(lambda s: s not in (".", "..") and s.isprintable() and not (len(s) >= 2 and s[1] == ":"))
any_path = st.text(max_size=60)


@given(any_path)
@example("../x")
@example("a/../../x")
@example("C:\\x")
@example("0:")  # ntpath reads any character before a colon as a drive
@example("\\\\server\\share")
@example("a\x00b")
def test_an_accepted_path_never_leaves_the_unpack_folder(path: str) -> None:
    if not is_safe_member_path(path):
        return
    unix = posixpath.normpath(posixpath.join("/unpack", path))
    assert unix == "/unpack" or unix.startswith("/unpack/")
    windows = ntpath.normpath(ntpath.join("C:\\unpack", path))
    assert windows.lower() == "c:\\unpack" or windows.lower().startswith("c:\\unpack\\")
    assert all(ch.isprintable() or ch == " " or not ch.isascii() for ch in path if ord(ch) < 0xA0)


@given(st.lists(plain_segment, min_size=1, max_size=6))
def test_ordinary_relative_paths_are_accepted(parts: list[str]) -> None:
    assert is_safe_member_path("/".join(parts))


@given(st.lists(plain_segment, max_size=4), st.lists(plain_segment, max_size=4))
def test_a_parent_step_anywhere_is_refused(before: list[str], after: list[str]) -> None:
    assert not is_safe_member_path("/".join([*before, "..", *after]))


@given(st.lists(plain_segment, min_size=1, max_size=4))
def test_absolute_and_drive_paths_are_refused(parts: list[str]) -> None:
    relative = "/".join(parts)
    assert not is_safe_member_path("/" + relative)
    assert not is_safe_member_path("C:/" + relative)
    assert not is_safe_member_path("d:" + relative)


@given(st.lists(plain_segment, min_size=1, max_size=4), st.integers(min_value=0, max_value=3))
def test_a_backslash_is_refused(parts: list[str], where: int) -> None:
    joined = "/".join(parts)
    at = min(where, len(joined))
    assert not is_safe_member_path(joined[:at] + "\\" + joined[at:])


@given(
    st.lists(plain_segment, min_size=1, max_size=4),
    st.characters(whitelist_categories=("Cc",)),
    st.integers(min_value=0, max_value=20),
)
def test_a_control_character_is_refused(parts: list[str], control: str, where: int) -> None:
    joined = "/".join(parts)
    at = min(where, len(joined))
    assert not is_safe_member_path(joined[:at] + control + joined[at:])


def test_the_empty_path_is_refused() -> None:
    assert not is_safe_member_path("")
