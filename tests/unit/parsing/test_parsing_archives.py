"""Hostile archives, built here, refused by the rule they break (R-ARC-1, R-ARC-3)."""

from __future__ import annotations

import io
import tarfile
import time
import zipfile

import pytest
from parsing_samples import (
    MIB,
    budget,
    docx_bytes,
    png_bytes,
    tar_entry,
    tar_gz_bytes,
    unix_zip_info,
    with_declared_size,
    with_flag,
    zip_bytes,
)

from sluice.errors import ArchiveRefusedError, DocumentRefused, EncryptedDocumentError, ParseError
from sluice.parsing import check_archive, extract, iter_archive_members, sniff
from sluice.parsing.archives import MAX_ARCHIVE_DEPTH

ZIP = sniff(zip_bytes([("a.txt", b"a")]), "x.zip")
TGZ = sniff(tar_gz_bytes([("a.txt", b"a")]), "x.tar.gz")


def refusal(data: bytes, kind=ZIP, **limits: int) -> DocumentRefused:
    with pytest.raises(DocumentRefused) as caught:
        check_archive(data, kind, budget(**limits))
    return caught.value


# --- paths -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("../../etc/passwd", "leads outside the archive"),
        ("docs/../../evil.txt", "leads outside the archive"),
        ("/etc/passwd", "starts at the root"),
        ("C:/Windows/evil.txt", "starts at a drive"),
        ("C:evil.txt", "starts at a drive"),
        ("..\\..\\Temp\\evil.txt", "backslash"),
        ("docs\\evil.txt", "backslash"),
        ("bell\x07.txt", "control character"),
        ("new\nline.txt", "control character"),
    ],
)
@pytest.mark.parametrize("container", ["zip", "tar.gz"])
def test_unsafe_member_paths_are_refused_naming_the_member_and_the_rule(name: str, rule: str, container: str) -> None:
    members = [("good.txt", b"fine"), (name, b"evil")]
    error = refusal(zip_bytes(members)) if container == "zip" else refusal(tar_gz_bytes(members), TGZ)
    assert isinstance(error, ArchiveRefusedError)
    assert rule in error.message
    shown = name.replace("\x07", "\\x07").replace("\n", "\\x0a")
    assert shown[:40] in error.message


def test_an_absurdly_long_path_is_refused() -> None:
    error = refusal(tar_gz_bytes([("a/" * 3000 + "deep.txt", b"x")]), TGZ)
    assert "longer than" in error.message


# --- member types ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        (tarfile.SYMTYPE, "symbolic link"),
        (tarfile.LNKTYPE, "hard link"),
        (tarfile.FIFOTYPE, "FIFO"),
        (tarfile.CHRTYPE, "device file"),
        (tarfile.BLKTYPE, "device file"),
    ],
)
def test_tar_links_devices_and_fifos_are_refused(kind: bytes, words: str) -> None:
    data = tar_gz_bytes([("file.txt", b"target"), tar_entry("special", kind, linkname="file.txt")])
    error = refusal(data, TGZ)
    assert isinstance(error, ArchiveRefusedError)
    assert words in error.message and "'special'" in error.message


@pytest.mark.parametrize(("mode", "words"), [(0o120777, "symbolic link"), (0o010644, "FIFO"), (0o020644, "device")])
def test_zip_members_whose_unix_mode_is_a_link_or_special_file_are_refused(mode: int, words: str) -> None:
    data = zip_bytes([("file.txt", b"target"), (unix_zip_info("special", mode), b"file.txt")])
    error = refusal(data)
    assert words in error.message and "'special'" in error.message


# --- names that collide ------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_a_path_that_appears_twice_is_refused() -> None:
    error = refusal(zip_bytes([("notes.txt", b"one"), ("notes.txt", b"two")]))
    assert "appears twice" in error.message and "'notes.txt'" in error.message


def test_a_path_that_appears_twice_in_a_tar_is_refused() -> None:
    error = refusal(tar_gz_bytes([("a/notes.txt", b"one"), ("./a/notes.txt", b"two")]), TGZ)
    assert "appears twice" in error.message


@pytest.mark.parametrize(
    "members",
    [
        [("report", b"a file"), ("report/page.txt", b"under it")],
        [("report/page.txt", b"under it"), ("report", b"a file")],
        [("report/", b""), ("report", b"a file")],
    ],
)
def test_a_path_that_is_both_file_and_folder_is_refused(members: list[tuple[str, bytes]]) -> None:
    error = refusal(zip_bytes(members))
    assert "both a file and a folder" in error.message and "'report'" in error.message


def test_folders_and_the_files_in_them_are_not_a_clash() -> None:
    members = check_archive(zip_bytes([("docs/", b""), ("docs/a.txt", b"a"), ("docs/sub/b.md", b"# b")]), ZIP, budget())
    assert [m.path for m in members] == ["docs/a.txt", "docs/sub/b.md"]


# --- encryption ------------------------------------------------------------------------------------


def test_an_encrypted_member_is_refused_as_encrypted() -> None:
    data = with_flag(zip_bytes([("open.txt", b"hello"), ("secret.txt", b"hidden")]), "secret.txt", 0x1)
    error = refusal(data)
    assert isinstance(error, EncryptedDocumentError)
    assert "'secret.txt'" in error.message and "encrypted" in error.message


# --- counts and sizes ------------------------------------------------------------------------------


def test_more_than_five_thousand_entries_is_refused_before_any_member_is_read() -> None:
    data = zip_bytes([(f"f{i}.txt", b"") for i in range(5001)], zipfile.ZIP_STORED)
    error = refusal(data)
    assert "more than 5,000 files and folders" in error.message


def test_more_than_the_entry_limit_in_a_tar_is_refused() -> None:
    error = refusal(tar_gz_bytes([(f"f{i}.txt", b"") for i in range(101)]), TGZ, archive_max_entries=100)
    assert "more than 100 files and folders" in error.message


def test_exactly_the_entry_limit_is_accepted() -> None:
    members = check_archive(zip_bytes([(f"f{i}.txt", b"x") for i in range(100)]), ZIP, budget(archive_max_entries=100))
    assert len(members) == 100


def test_a_ratio_bomb_under_the_absolute_limit_is_refused_and_read_only_to_the_limit() -> None:
    data = zip_bytes([("zeros.txt", b"\0" * (20 * MIB))])
    assert len(data) < 30_000  # 20 MiB of zeros deflate to about 20 KB: 1,000x
    started = time.monotonic()
    error = refusal(data)
    assert "more than 100 times its own size" in error.message and "'zeros.txt'" in error.message
    assert time.monotonic() - started < 2


def test_a_tar_gz_ratio_bomb_is_counted_on_the_decompressed_stream() -> None:
    error = refusal(tar_gz_bytes([("zeros.bin", b"\0" * (20 * MIB))]), TGZ)
    assert "more than 100 times its own size" in error.message


def test_a_tiny_archive_is_no_bomb_whatever_its_ratio() -> None:
    # tar pads to 10 KiB and a repeated line deflates to almost nothing: 200 KiB from a few hundred bytes
    # is over 100x, but a bomb is measured by what it costs to unpack, and this costs nothing.
    note = b"The boathouse key hangs by the door.\n" * 5_500
    data = tar_gz_bytes([("notes.txt", note)])
    assert len(data) * 100 < len(note)
    members = check_archive(data, TGZ, budget())
    assert [m.path for m in members] == ["notes.txt"]


def test_a_tiny_archive_holding_a_hard_link_gets_the_hard_link_sentence() -> None:
    data = tar_gz_bytes([("a.txt", b"x" * 20_000), tar_entry("b.txt", tarfile.LNKTYPE, linkname="a.txt")])
    error = refusal(data, TGZ)
    assert error.message == "The archive was refused: 'b.txt' is a hard link, not a file or folder."


def test_the_absolute_unpacked_limit_is_enforced() -> None:
    data = zip_bytes([(f"part{i}.txt", bytes(range(256)) * 4096) for i in range(4)], zipfile.ZIP_STORED)
    error = refusal(data, archive_max_bytes=3 * MIB)
    assert "unpacks to more than 3 MiB" in error.message


def test_one_member_over_the_member_limit_is_refused() -> None:
    data = zip_bytes([("big.bin", bytes(range(256)) * 8192)], zipfile.ZIP_STORED)
    error = refusal(data, archive_max_member_bytes=1 * MIB)
    assert "'big.bin' unpacks to more than 1 MiB" in error.message


def test_a_header_that_admits_to_a_huge_member_is_refused_without_inflating_it() -> None:
    data = with_declared_size(zip_bytes([("huge.txt", b"small really")]), "huge.txt", 4_000_000_000)
    error = refusal(data)
    assert "'huge.txt' unpacks to more than 50 MiB" in error.message


def test_a_header_that_understates_a_member_does_not_get_it_read_past_the_header() -> None:
    # The header says 1 KB; the data inflates to 30 MiB. Reading is measured, never trusted:
    # the reader stops where the header said, finds the checksum wrong and refuses the file.
    real = zip_bytes([("liar.txt", b"A" * (30 * MIB))])
    data = with_declared_size(real, "liar.txt", 1024)
    started = time.monotonic()
    error = refusal(data)
    assert isinstance(error, ParseError)
    assert "'liar.txt' is damaged" in error.message
    assert time.monotonic() - started < 1


def test_a_gzip_trailer_that_lies_about_the_size_is_not_trusted() -> None:
    data = bytearray(tar_gz_bytes([("zeros.bin", b"\0" * (20 * MIB))]))
    data[-4:] = (100).to_bytes(4, "little")  # ISIZE: "100 bytes"
    assert isinstance(refusal(bytes(data), TGZ), DocumentRefused)


# --- nesting -----------------------------------------------------------------------------------------


def _nested_bomb(levels: int, fan_out: int) -> bytes:
    inner = zip_bytes([("payload.txt", b"\0" * MIB)])
    for level in range(levels):
        inner = zip_bytes([(f"layer{level}-{i}.zip", inner) for i in range(fan_out)])
    return inner


def test_a_42_zip_style_nested_bomb_is_refused_on_the_total_of_its_levels() -> None:
    data = _nested_bomb(levels=3, fan_out=8)  # 512 MiB in total, every level small
    with zipfile.ZipFile(io.BytesIO(data)) as outer:
        assert sum(i.file_size for i in outer.infolist()) < 100 * len(data)  # the top level looks harmless
    started = time.monotonic()
    error = refusal(data)
    assert isinstance(error, ArchiveRefusedError)
    assert "times its own size" in error.message or "unpacks to more than" in error.message
    assert time.monotonic() - started < 5


def test_archives_nested_deeper_than_the_limit_are_refused() -> None:
    data = zip_bytes([("note.txt", b"hello")])
    for level in range(MAX_ARCHIVE_DEPTH + 1):
        data = zip_bytes([(f"level{level}.zip", data)], zipfile.ZIP_STORED)
    error = refusal(data)
    assert f"nests archives more than {MAX_ARCHIVE_DEPTH} deep" in error.message


def test_a_small_archive_inside_an_archive_is_accepted_and_listed() -> None:
    inner = tar_gz_bytes([("inner/readme.md", b"# inner")])
    members = check_archive(zip_bytes([("bundle.tar.gz", inner), ("top.txt", b"top")]), ZIP, budget())
    assert [(m.path, m.kind.kind if m.kind else None) for m in members] == [
        ("bundle.tar.gz", "tar.gz"),
        ("top.txt", "txt"),
    ]


# --- what an accepted archive yields ----------------------------------------------------------------


def test_accepted_archive_lists_members_and_skips_unsupported_ones() -> None:
    data = zip_bytes(
        [
            ("docs/", b""),
            ("docs/guide.md", b"# Guide\nRead me."),
            ("docs/tool.exe", b"MZ\x90\x00" + b"\x00" * 200),
            ("docs/logo.png", png_bytes()),
            ("data.csv", b"a,b\n1,2\n"),
        ]
    )
    members = check_archive(data, ZIP, budget())
    by_path = {m.path: m for m in members}
    assert set(by_path) == {"docs/guide.md", "docs/tool.exe", "docs/logo.png", "data.csv"}
    assert by_path["docs/guide.md"].kind.kind == "md" and by_path["docs/guide.md"].skipped_reason is None
    assert (
        by_path["docs/tool.exe"].kind is None
        and "Sluice cannot read .exe files" in by_path["docs/tool.exe"].skipped_reason
    )
    assert by_path["docs/logo.png"].skipped_reason is not None
    assert by_path["data.csv"].size == 8

    yielded = {member.path: content for member, content in iter_archive_members(data, ZIP, budget())}
    assert yielded == {"docs/guide.md": b"# Guide\nRead me.", "data.csv": b"a,b\n1,2\n"}

    document = extract(data, ZIP, budget())
    assert document.members is not None and len(document.members) == 4
    assert "docs/guide.md" in document.text.splitlines()
    assert any(line.startswith("docs/tool.exe (skipped:") for line in document.text.splitlines())


def test_a_plain_tar_named_tgz_is_refused_and_a_zip_named_tar_gz_is_read_as_a_zip() -> None:
    from sluice.errors import UnsupportedTypeError

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("a.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"a"))
    with pytest.raises(UnsupportedTypeError, match="uncompressed tar"):
        sniff(raw.getvalue(), "a.tgz")
    # R-UP-6 (revised): another archive kind under an archive's name is read as what it is.
    assert sniff(zip_bytes([("a.txt", b"a")]), "a.tar.gz").kind == "zip"


# --- Office containers (R-ARC-3) ----------------------------------------------------------------------


def test_a_small_docx_that_inflates_past_the_limits_is_refused_before_python_docx_opens_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = docx_bytes(["Quarterly report"], extra_parts={"word/media/filler.bin": b"\0" * (40 * MIB)})
    assert len(data) < 80_000
    kind = sniff(data, "report.docx")

    import docx.opc.package

    opened: list[object] = []
    monkeypatch.setattr(docx.opc.package.OpcPackage, "open", classmethod(lambda cls, *a: opened.append(a)))
    with pytest.raises(ArchiveRefusedError) as caught:
        extract(data, kind, budget())
    assert "This Word document (.docx) was refused" in caught.value.message
    assert "'word/media/filler.bin'" in caught.value.message
    assert opened == []


def test_an_office_part_over_the_member_limit_is_refused() -> None:
    data = docx_bytes(["x"], extra_parts={"word/media/big.bin": bytes(range(256)) * 8192})
    with pytest.raises(ArchiveRefusedError, match="unpacks to more than 1 MiB"):
        extract(data, sniff(data, "a.docx"), budget(archive_max_member_bytes=MIB))


def test_an_office_file_with_a_dtd_in_a_part_is_refused() -> None:
    from parsing_samples import replace_zip_member

    data = docx_bytes(["hello"])
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        xml = archive.read("word/document.xml")
    hostile = xml.replace(b"?>", b'?>\n<!DOCTYPE w:document [<!ENTITY x SYSTEM "file:///etc/passwd">]>', 1)
    data = replace_zip_member(data, "word/document.xml", hostile)
    with pytest.raises(ParseError, match="'word/document.xml' names a DTD"):
        extract(data, sniff(data, "a.docx"), budget())


_DOCTYPE = '<!DOCTYPE w:document [<!ENTITY x SYSTEM "file:///etc/passwd">]>'


def _with_hostile_document(prolog_and_root: bytes, name: str = "word/document.xml") -> bytes:
    from parsing_samples import replace_zip_member

    data = docx_bytes(["hello"])
    if name == "word/document.xml":
        return replace_zip_member(data, name, prolog_and_root)
    return docx_bytes(["hello"], extra_parts={name: prolog_and_root})


@pytest.mark.parametrize("case", ["utf16", "utf32", "long_comment", "upper_case_name", "typed_part"])
def test_the_dtd_check_reads_a_part_as_an_xml_parser_would(case: str) -> None:
    # Probed: a UTF-16 part, a DOCTYPE after a comment longer than the bytes searched, and a
    # part named .XML all passed a byte search that claimed to refuse every DTD.
    root = '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"/>'
    if case == "utf16":
        data = _with_hostile_document(f'<?xml version="1.0" encoding="UTF-16"?>{_DOCTYPE}{root}'.encode("utf-16"))
    elif case == "utf32":  # an encoding expat cannot read: searched whole after decoding
        data = _with_hostile_document(f"{_DOCTYPE}{root}".encode("utf-32"))
    elif case == "long_comment":
        data = _with_hostile_document(f'<?xml version="1.0"?><!--{"x" * 200_000}-->{_DOCTYPE}{root}'.encode())
    elif case == "upper_case_name":
        data = _with_hostile_document(f"{_DOCTYPE}{root}".encode(), "customXml/ITEM1.XML")
    else:  # an extension the package declares as XML, which the libraries parse as such
        from parsing_samples import replace_zip_member

        data = docx_bytes(["hello"], extra_parts={"word/extra.dat": f"{_DOCTYPE}{root}".encode()})
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            types = archive.read("[Content_Types].xml")
        types = types.replace(b"</Types>", b'<Default Extension="dat" ContentType="application/xml"/></Types>')
        data = replace_zip_member(data, "[Content_Types].xml", types)
    with pytest.raises(ParseError, match="names a DTD|declares XML entities"):
        extract(data, sniff(data, "a.docx"), budget())


def test_an_svg_picture_with_a_doctype_is_not_a_part_the_libraries_parse() -> None:
    svg = (b'<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
           b'"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd"><svg xmlns="http://www.w3.org/2000/svg"/>')
    data = docx_bytes(["hello"], extra_parts={"word/media/image1.svg": svg})
    assert "hello" in extract(data, sniff(data, "a.docx"), budget()).text


def test_an_odf_part_may_name_a_dtd_but_never_declare_entities() -> None:
    from parsing_samples import odt_bytes, replace_zip_member

    data = odt_bytes(["hello"])
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        content = archive.read("content.xml")
    named = content.replace(b"?>", b'?><!DOCTYPE office:document-content SYSTEM "office.dtd">', 1)
    assert "hello" in extract(replace_zip_member(data, "content.xml", named), sniff(data, "a.odt"), budget()).text
    declared = content.replace(b"?>", b'?><!DOCTYPE d [<!ENTITY a "aaaa">]>', 1)
    hostile = replace_zip_member(data, "content.xml", declared)
    with pytest.raises(ParseError, match="declares XML entities"):
        extract(hostile, sniff(hostile, "a.odt"), budget())


def test_a_member_name_that_is_not_utf8_is_listed_with_replacement_characters() -> None:
    data = tar_gz_bytes([("caf\udce9.txt", b"latin-1 name")])  # the byte 0xE9, as tarfile keeps it
    (member,) = check_archive(data, TGZ, budget())
    assert member.path == "caf\ufffd.txt"
    member.path.encode("utf-8")
