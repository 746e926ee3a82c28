"""Archives read whole and refused when unsafe (R-ARC-1..3).

An archive is walked member by member before anything else happens to it.
Sizes are counted on the bytes actually decompressed — a zip header or a gzip
trailer can state anything — and the walk stops the moment a limit is passed,
so a bomb costs at most the limit, never its own size. Archives inside the
archive are walked too, against the same counters: a 42.zip-style bomb is
small at every level and enormous only in total.

The limits and the member path rules are in ``archive_limits``; the same limits
guard the zip containers that Office and OpenDocument files are (``containers``):
their libraries decompress every part before reading a word.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import posixpath
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator

from sluice.errors import DocumentRefused, EncryptedDocumentError, ParseError
from sluice.parsing.archive_limits import Names, Tally, path_problem, show_path
from sluice.parsing.budget import ParseBudget, storable
from sluice.parsing.document import ArchiveMember
from sluice.parsing.kinds import FileKind
from sluice.parsing.zip_directory import ZipDirectoryError, read_zip_directory

# Archives inside archives inside the upload: deeper than this is refused. Nothing a
# person packs by hand nests this deep, while a quine (droste.zip holds itself) nests forever.
MAX_ARCHIVE_DEPTH = 4
_CHUNK = 1 << 16
_SUPPORTED_ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
_ZIP_METHOD_NAMES = {6: "Implode", 9: "Deflate64", 95: "XZ", 96: "JPEG", 97: "WavPack", 98: "PPMd", 99: "AES"}


# --- zip --------------------------------------------------------------------------------


def _zip_name(info: zipfile.ZipInfo) -> str:
    # zipfile cuts a name at its first NUL; the unpacker of a later tool might not. Check
    # the name as stored. Names without the UTF-8 flag are often UTF-8 anyway.
    name = info.orig_filename
    if not info.flag_bits & 0x800:
        with contextlib.suppress(UnicodeEncodeError, UnicodeDecodeError):
            name = name.encode("cp437").decode("utf-8")
    return name


def _zip_mode(info: zipfile.ZipInfo) -> int | None:
    """The Unix file type of a member, when the zip records one (many writers leave it 0)."""
    if info.create_system != 3:  # only Unix-made zips carry a file type in their attributes
        return None
    return stat.S_IFMT(info.external_attr >> 16) or None


def open_zip(data: bytes, tally: Tally) -> zipfile.ZipFile:
    try:
        directory = read_zip_directory(data, tally.budget.archive_max_entries + 1)
    except ZipDirectoryError:
        raise ParseError(f"{tally.label} could not be read: it is not a valid zip file.") from None
    if directory.more or tally.entries + len(directory.entries) > tally.budget.archive_max_entries:
        raise tally.refuse(f"it holds more than {tally.budget.archive_max_entries:,} files and folders.")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError):
        raise ParseError(f"{tally.label} could not be read: it is not a valid zip file.") from None
    return archive


def read_zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str, tally: Tally) -> bytes:
    if info.flag_bits & 0x1:
        raise EncryptedDocumentError(
            f"{tally.label} was refused: {show_path(path)} is encrypted. Sluice cannot read "
            "password-protected archives; upload them without a password."
        )
    if info.compress_type not in _SUPPORTED_ZIP_METHODS:
        method = _ZIP_METHOD_NAMES.get(info.compress_type, f"method {info.compress_type}")
        raise ParseError(
            f"{tally.label} could not be read: {show_path(path)} is compressed with {method}, which "
            "Sluice cannot decompress. Re-create the archive with ordinary (Deflate) compression."
        )
    tally.declared(path, info.file_size)
    pieces: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(_CHUNK):
                size += len(chunk)
                tally.add(path, size, len(chunk))
                pieces.append(chunk)
    except DocumentRefused:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError, NotImplementedError):
        raise ParseError(f"{tally.label} could not be read: {show_path(path)} is damaged.") from None
    return b"".join(pieces)


def _walk_zip(data: bytes, tally: Tally, depth: int, keep: bool) -> Iterator[tuple[ArchiveMember, bytes]]:
    archive = open_zip(data, tally)
    names = Names(tally)
    infos = archive.infolist()
    # Names, types and encryption are all in the directory: refuse on them before
    # decompressing anything.
    for info in infos:
        tally.count_entry()
        path = _zip_name(info)
        problem = path_problem(path)
        if problem:
            raise tally.refuse(f"the member {show_path(path)} {problem}.")
        mode = _zip_mode(info)
        if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise tally.refuse(f"{show_path(path)} is {_special_kind(mode)}, not a file or folder.")
        names.add(path, info.is_dir())
        if info.flag_bits & 0x1:
            raise EncryptedDocumentError(
                f"{tally.label} was refused: {show_path(path)} is encrypted. Sluice cannot read "
                "password-protected archives; upload them without a password."
            )
        tally.declared(path, info.file_size)
    for info in infos:
        if info.is_dir():
            continue
        path = _zip_name(info)
        content = read_zip_member(archive, info, path, tally)
        yield from _member(path, content, tally, depth, keep)


def _special_kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


# --- tar.gz -----------------------------------------------------------------------------


class _CountingReader(io.RawIOBase):
    """The decompressed tar stream, counted as it is read: tar headers and pax records are
    bytes the unpacker holds too, and a gzip trailer's size field is not trusted."""

    def __init__(self, source: gzip.GzipFile, tally: Tally) -> None:
        self.source = source
        self.tally = tally
        self.current = "(tar headers)"

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = _CHUNK
        chunk = self.source.read(size)
        if chunk:
            self.tally.add(self.current, 0, len(chunk))
        return chunk

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        chunk = self.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _walk_tar_gz(data: bytes, tally: Tally, depth: int, keep: bool) -> Iterator[tuple[ArchiveMember, bytes]]:
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
        yield from _walk_tar_stream(_CountingReader(stream, tally), tally, depth, keep)


def _walk_tar_stream(
    reader: _CountingReader, tally: Tally, depth: int, keep: bool
) -> Iterator[tuple[ArchiveMember, bytes]]:
    names = Names(tally)
    try:
        with tarfile.open(fileobj=reader, mode="r|") as tar:
            for member in tar:
                tally.count_entry()
                path = member.name
                _check_tar_member(member, path, tally)
                names.add(path, member.isdir())
                if member.isdir():
                    continue
                tally.declared(path, member.size)
                reader.current = path
                stream = tar.extractfile(member)
                pieces: list[bytes] = []
                size = 0
                while stream is not None and (chunk := stream.read(_CHUNK)):
                    size += len(chunk)
                    # The bytes were counted toward the total as they were decompressed;
                    # here only the member's own size is checked.
                    tally.add(path, size, 0)
                    pieces.append(chunk)
                reader.current = "(tar headers)"
                yield from _member(path, b"".join(pieces), tally, depth, keep)
    except DocumentRefused:
        raise
    except (tarfile.TarError, OSError, EOFError, zlib.error, ValueError, UnicodeError):
        raise ParseError(
            f"{tally.label} could not be read: it is not a valid .tar.gz file, or it is damaged or incomplete."
        ) from None


def _check_tar_member(member: tarfile.TarInfo, path: str, tally: Tally) -> None:
    problem = path_problem(path)
    if problem:
        raise tally.refuse(f"the member {show_path(path)} {problem}.")
    if member.issym():
        raise tally.refuse(f"{show_path(path)} is a symbolic link, not a file or folder.")
    if member.islnk():
        raise tally.refuse(f"{show_path(path)} is a hard link, not a file or folder.")
    if member.isfifo():
        raise tally.refuse(f"{show_path(path)} is a FIFO (named pipe), not a file or folder.")
    if member.ischr() or member.isblk():
        raise tally.refuse(f"{show_path(path)} is a device file, not a file or folder.")
    if member.issparse():
        raise tally.refuse(f"{show_path(path)} is a sparse file, which Sluice does not unpack.")
    if not (member.isreg() or member.isdir()):
        raise tally.refuse(f"{show_path(path)} is a special entry, not a file or folder.")


# --- members ----------------------------------------------------------------------------


def _member(path: str, content: bytes, tally: Tally, depth: int, keep: bool) -> Iterator[tuple[ArchiveMember, bytes]]:
    from sluice.parsing.sniff import sniff

    name = path.rsplit("/", 1)[-1]
    kind: FileKind | None
    skipped: str | None = None
    try:
        kind = sniff(content, name)
    except DocumentRefused as refused:
        kind, skipped = None, refused.message
    if kind is not None and kind.family == "archive":
        if depth + 1 > MAX_ARCHIVE_DEPTH:
            raise tally.refuse(f"it nests archives more than {MAX_ARCHIVE_DEPTH} deep (at {show_path(path)}).")
        # The same counters, one level down: the bomb is in the total, not in any one level.
        for _ in _walk(content, kind, tally, depth + 1, keep=False):
            pass
    elif kind is not None and kind.family == "image":
        skipped = "an image: images are stored with chat messages, not indexed"
    # tarfile keeps undecodable name bytes as lone surrogates; a stored path must be UTF-8.
    member = ArchiveMember(path=storable(path), size=len(content), kind=kind, skipped_reason=skipped)
    yield member, (content if keep else b"")


def _walk(data: bytes, kind: FileKind, tally: Tally, depth: int, keep: bool) -> Iterator[tuple[ArchiveMember, bytes]]:
    if kind.kind == "zip":
        return _walk_zip(data, tally, depth, keep)
    if kind.kind == "tar.gz":
        return _walk_tar_gz(data, tally, depth, keep)
    raise ValueError(f"not an archive kind: {kind.kind}")


def check_archive(data: bytes, kind: FileKind, budget: ParseBudget) -> list[ArchiveMember]:
    """Read the whole archive and refuse it if any rule of R-ARC-1 is broken."""
    tally = Tally(budget=budget, outer_size=len(data), label="The archive")
    return [member for member, _ in _walk(data, kind, tally, depth=0, keep=False)]


def iter_archive_members(data: bytes, kind: FileKind, budget: ParseBudget) -> Iterator[tuple[ArchiveMember, bytes]]:
    """The supported members with their bytes, one at a time; call after check_archive passed."""
    tally = Tally(budget=budget, outer_size=len(data), label="The archive")
    for member, content in _walk(data, kind, tally, depth=0, keep=True):
        if member.kind is not None and member.skipped_reason is None:
            yield member, content


def member_source_path(archive_path: str, member_path: str) -> str:
    """``source_path`` of a document unpacked from an archive (R-ARC-2)."""
    return f"{archive_path}!/{posixpath.normpath(member_path)}"
