"""Archives read whole and refused when unsafe (R-ARC-1..3).

An archive is walked member by member before anything else happens to it.
Sizes are counted on the bytes actually decompressed — a zip header or a gzip
trailer can state anything — and the walk stops the moment a limit is passed,
so a bomb costs at most the limit, never its own size. Archives inside the
archive are walked too, against the same counters: a 42.zip-style bomb is
small at every level and enormous only in total.

The same entry, size, ratio and member limits guard the zip containers that
Office and OpenDocument files are (``check_container``): their libraries
decompress every part before reading a word.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import posixpath
import re
import stat
import tarfile
import unicodedata
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from sluice.errors import ArchiveRefusedError, DocumentRefused, EncryptedDocumentError, ParseError
from sluice.parsing.budget import ParseBudget, storable
from sluice.parsing.document import ArchiveMember
from sluice.parsing.kinds import FileKind
from sluice.parsing.zip_directory import ZipDirectoryError, read_zip_directory

# Archives inside archives inside the upload: deeper than this is refused. Nothing a
# person packs by hand nests this deep, while a quine (droste.zip holds itself) nests forever.
MAX_ARCHIVE_DEPTH = 4
# Longer than any filesystem allows (PATH_MAX); such names exist only to break unpackers.
MAX_PATH_CHARS = 4096
_CHUNK = 1 << 16
# How much of an XML part's prolog is handed to the parser at a time.
_PROLOG_BYTES = 1 << 16
_SUPPORTED_ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
_ZIP_METHOD_NAMES = {6: "Implode", 9: "Deflate64", 95: "XZ", 96: "JPEG", 97: "WavPack", 98: "PPMd", 99: "AES"}


def is_safe_member_path(path: str) -> bool:
    """True when ``path`` stays inside the folder it would be unpacked into, on any OS."""
    if not path or len(path) > MAX_PATH_CHARS:
        return False
    if "\\" in path or any(unicodedata.category(ch) == "Cc" for ch in path):
        return False
    # Any character before a colon: Windows path APIs (and Python's ntpath) read it as a drive.
    if path.startswith("/") or path[1:2] == ":":
        return False
    return ".." not in path.split("/")


def _show(path: str) -> str:
    """A member path as a refusal can quote it: control characters visible, undecodable
    bytes as U+FFFD (the sentence is stored as UTF-8), length bounded."""
    shown = "".join(_shown_char(ch) for ch in path)
    if len(shown) > 120:
        shown = shown[:117] + "…"
    return f"'{shown}'"


def _shown_char(ch: str) -> str:
    category = unicodedata.category(ch)
    if category == "Cc":
        return f"\\x{ord(ch):02x}"
    return "\ufffd" if category == "Cs" else ch


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def _path_problem(path: str) -> str | None:
    if is_safe_member_path(path):
        return None
    if not path:
        return "has an empty name"
    if len(path) > MAX_PATH_CHARS:
        return f"has a path longer than {MAX_PATH_CHARS:,} characters"
    if any(unicodedata.category(ch) == "Cc" for ch in path):
        return "has a control character in its path"
    if "\\" in path:
        return "has a backslash in its path, which Windows reads as a folder separator"
    if path.startswith("/"):
        return "starts at the root of the filesystem (/)"
    if path[1:2] == ":":
        return "starts at a drive (like C:)"
    return "leads outside the archive (../)"


def _normalised(path: str) -> str:
    return "/".join(part for part in path.split("/") if part not in ("", "."))


# The ratio limit applies past this much unpacked: a bomb is measured by what it costs to unpack, and a
# tiny archive (tar pads to 10 KiB, a repeated line deflates to nothing) is over 100x and costs nothing.
RATIO_FLOOR_BYTES = 1 << 20


@dataclass
class _Tally:
    """Counters shared by an archive and every archive inside it."""

    budget: ParseBudget
    outer_size: int
    label: str  # "The archive", "This Word document"
    entries: int = 0
    total: int = 0

    def refuse(self, sentence: str) -> ArchiveRefusedError:
        return ArchiveRefusedError(f"{self.label} was refused: {sentence}")

    def count_entry(self) -> None:
        self.entries += 1
        if self.entries > self.budget.archive_max_entries:
            raise self.refuse(f"it holds more than {self.budget.archive_max_entries:,} files and folders.")

    def declared(self, path: str, size: int) -> None:
        # A header that admits to a bomb is refused at once; one that hides it is caught below.
        if size > self.budget.archive_max_member_bytes:
            raise self._member_too_big(path)

    def add(self, path: str, member_bytes: int, chunk: int) -> None:
        self.total += chunk
        if member_bytes > self.budget.archive_max_member_bytes:
            raise self._member_too_big(path)
        if self.total > self.budget.archive_max_bytes:
            raise self.refuse(
                f"it unpacks to more than {_mib(self.budget.archive_max_bytes)} (stopped while reading {_show(path)})."
            )
        if self.total > max(self.budget.archive_max_ratio * self.outer_size, RATIO_FLOOR_BYTES):
            raise self.refuse(
                f"it unpacks to more than {self.budget.archive_max_ratio} times its own size "
                f"(stopped while reading {_show(path)}), which is how decompression bombs work."
            )

    def _member_too_big(self, path: str) -> ArchiveRefusedError:
        return self.refuse(
            f"{_show(path)} unpacks to more than {_mib(self.budget.archive_max_member_bytes)}, "
            "the limit for one file in an archive."
        )


class _Names:
    """Duplicate paths and file/folder clashes within one archive."""

    def __init__(self, tally: _Tally) -> None:
        self.tally = tally
        self.files: set[str] = set()
        self.explicit_folders: set[str] = set()
        self.folders: set[str] = set()  # explicit ones and every parent of a path

    def add(self, path: str, is_dir: bool) -> None:
        key = _normalised(path)
        if not key:
            return  # "./": the archive's own root
        parts = key.split("/")
        parents = ["/".join(parts[:i]) for i in range(1, len(parts))]
        for parent in parents:
            if parent in self.files:
                raise self.tally.refuse(f"{_show(parent)} is both a file and a folder.")
        if is_dir:
            if key in self.explicit_folders:
                raise self.tally.refuse(f"the path {_show(path)} appears twice.")
            if key in self.files:
                raise self.tally.refuse(f"{_show(path)} is both a file and a folder.")
            self.explicit_folders.add(key)
            self.folders.add(key)
        else:
            if key in self.files:
                raise self.tally.refuse(f"the path {_show(path)} appears twice.")
            if key in self.folders:
                raise self.tally.refuse(f"{_show(path)} is both a file and a folder.")
            self.files.add(key)
        self.folders.update(parents)


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


def _open_zip(data: bytes, tally: _Tally) -> zipfile.ZipFile:
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


def _read_zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str, tally: _Tally) -> bytes:
    if info.flag_bits & 0x1:
        raise EncryptedDocumentError(
            f"{tally.label} was refused: {_show(path)} is encrypted. Sluice cannot read "
            "password-protected archives; upload them without a password."
        )
    if info.compress_type not in _SUPPORTED_ZIP_METHODS:
        method = _ZIP_METHOD_NAMES.get(info.compress_type, f"method {info.compress_type}")
        raise ParseError(
            f"{tally.label} could not be read: {_show(path)} is compressed with {method}, which "
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
        raise ParseError(f"{tally.label} could not be read: {_show(path)} is damaged.") from None
    return b"".join(pieces)


def _walk_zip(data: bytes, tally: _Tally, depth: int, keep: bool) -> Iterator[tuple[ArchiveMember, bytes]]:
    archive = _open_zip(data, tally)
    names = _Names(tally)
    infos = archive.infolist()
    # Names, types and encryption are all in the directory: refuse on them before
    # decompressing anything.
    for info in infos:
        tally.count_entry()
        path = _zip_name(info)
        problem = _path_problem(path)
        if problem:
            raise tally.refuse(f"the member {_show(path)} {problem}.")
        mode = _zip_mode(info)
        if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise tally.refuse(f"{_show(path)} is {_special_kind(mode)}, not a file or folder.")
        names.add(path, info.is_dir())
        if info.flag_bits & 0x1:
            raise EncryptedDocumentError(
                f"{tally.label} was refused: {_show(path)} is encrypted. Sluice cannot read "
                "password-protected archives; upload them without a password."
            )
        tally.declared(path, info.file_size)
    for info in infos:
        if info.is_dir():
            continue
        path = _zip_name(info)
        content = _read_zip_member(archive, info, path, tally)
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

    def __init__(self, source: gzip.GzipFile, tally: _Tally) -> None:
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


def _walk_tar_gz(data: bytes, tally: _Tally, depth: int, keep: bool) -> Iterator[tuple[ArchiveMember, bytes]]:
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
        yield from _walk_tar_stream(_CountingReader(stream, tally), tally, depth, keep)


def _walk_tar_stream(
    reader: _CountingReader, tally: _Tally, depth: int, keep: bool
) -> Iterator[tuple[ArchiveMember, bytes]]:
    names = _Names(tally)
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


def _check_tar_member(member: tarfile.TarInfo, path: str, tally: _Tally) -> None:
    problem = _path_problem(path)
    if problem:
        raise tally.refuse(f"the member {_show(path)} {problem}.")
    if member.issym():
        raise tally.refuse(f"{_show(path)} is a symbolic link, not a file or folder.")
    if member.islnk():
        raise tally.refuse(f"{_show(path)} is a hard link, not a file or folder.")
    if member.isfifo():
        raise tally.refuse(f"{_show(path)} is a FIFO (named pipe), not a file or folder.")
    if member.ischr() or member.isblk():
        raise tally.refuse(f"{_show(path)} is a device file, not a file or folder.")
    if member.issparse():
        raise tally.refuse(f"{_show(path)} is a sparse file, which Sluice does not unpack.")
    if not (member.isreg() or member.isdir()):
        raise tally.refuse(f"{_show(path)} is a special entry, not a file or folder.")


# --- members ----------------------------------------------------------------------------


def _member(path: str, content: bytes, tally: _Tally, depth: int, keep: bool) -> Iterator[tuple[ArchiveMember, bytes]]:
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
            raise tally.refuse(f"it nests archives more than {MAX_ARCHIVE_DEPTH} deep (at {_show(path)}).")
        # The same counters, one level down: the bomb is in the total, not in any one level.
        for _ in _walk(content, kind, tally, depth + 1, keep=False):
            pass
    elif kind is not None and kind.family == "image":
        skipped = "an image: images are stored with chat messages, not indexed"
    # tarfile keeps undecodable name bytes as lone surrogates; a stored path must be UTF-8.
    member = ArchiveMember(path=storable(path), size=len(content), kind=kind, skipped_reason=skipped)
    yield member, (content if keep else b"")


def _walk(data: bytes, kind: FileKind, tally: _Tally, depth: int, keep: bool) -> Iterator[tuple[ArchiveMember, bytes]]:
    if kind.kind == "zip":
        return _walk_zip(data, tally, depth, keep)
    if kind.kind == "tar.gz":
        return _walk_tar_gz(data, tally, depth, keep)
    raise ValueError(f"not an archive kind: {kind.kind}")


def check_archive(data: bytes, kind: FileKind, budget: ParseBudget) -> list[ArchiveMember]:
    """Read the whole archive and refuse it if any rule of R-ARC-1 is broken."""
    tally = _Tally(budget=budget, outer_size=len(data), label="The archive")
    return [member for member, _ in _walk(data, kind, tally, depth=0, keep=False)]


def iter_archive_members(data: bytes, kind: FileKind, budget: ParseBudget) -> Iterator[tuple[ArchiveMember, bytes]]:
    """The supported members with their bytes, one at a time; call after check_archive passed."""
    tally = _Tally(budget=budget, outer_size=len(data), label="The archive")
    for member, content in _walk(data, kind, tally, depth=0, keep=True):
        if member.kind is not None and member.skipped_reason is None:
            yield member, content


# --- Office and OpenDocument containers (R-ARC-3) ----------------------------------------


def check_container(data: bytes, budget: ParseBudget, label: str, *, odf: bool) -> None:
    """Entry, size, ratio and member limits for a .docx/.xlsx/.pptx/.odt/.ods/.odp, plus the
    XML rule: OOXML never carries a DTD, and ODF may name one but never declares entities.

    The rule is checked on every part the Office libraries parse as XML (by name, and by the
    package's own content types), on its prolog as an XML parser reads it: whatever its
    encoding (UTF-16 included), however long a comment comes first.
    """
    tally = _Tally(budget=budget, outer_size=len(data), label=label)
    archive = _open_zip(data, tally)
    for info in archive.infolist():
        tally.count_entry()
        tally.declared(info.filename, info.file_size)
    xml_types = _XmlParts()
    # The content types first: they say which other parts the libraries read as XML.
    for info in sorted(archive.infolist(), key=lambda i: i.filename != _CONTENT_TYPES):
        if info.is_dir():
            continue
        content = _read_zip_member(archive, info, info.filename, tally)
        if not xml_types.holds(info.filename):
            continue
        problem = xml_prolog_problem(content, allow_doctype=odf)
        if problem is not None:
            raise ParseError(
                f"{label} was refused: its part {_show(info.filename)} {problem}, which Office files never "
                "need and which is how entity-expansion and external-file attacks are built."
            )
        if info.filename == _CONTENT_TYPES:
            xml_types.learn(content)


_CONTENT_TYPES = "[Content_Types].xml"
_XML_SUFFIXES = (".xml", ".rels")


class _XmlParts:
    """Which parts of an Office package are XML: by name, and by the package's [Content_Types].xml."""

    def __init__(self) -> None:
        self.extensions: set[str] = set()
        self.names: set[str] = set()

    def holds(self, name: str) -> bool:
        lower = name.lower()
        return (lower.endswith(_XML_SUFFIXES) or "/" + lower.lstrip("/") in self.names
                or lower.rpartition(".")[2] in self.extensions)

    def learn(self, content_types: bytes) -> None:
        from xml.parsers import expat

        def start(tag: str, attrs: dict[str, str]) -> None:
            kind = attrs.get("ContentType", "").lower()
            # An image (SVG) is stored, never parsed by the Office libraries.
            if not kind.endswith("xml") or kind.startswith("image/"):
                return
            if tag.endswith("Default") and "Extension" in attrs:
                self.extensions.add(attrs["Extension"].lower())
            elif tag.endswith("Override") and "PartName" in attrs:
                self.names.add("/" + attrs["PartName"].lower().lstrip("/"))

        parser = expat.ParserCreate()
        parser.StartElementHandler = start
        with contextlib.suppress(expat.ExpatError):
            parser.Parse(content_types, True)


class _PrologDone(Exception):
    pass


class _PrologRefused(Exception):
    pass


def xml_prolog_problem(content: bytes, *, allow_doctype: bool) -> str | None:
    """What is wrong with an XML part's prolog (a DTD, entity declarations), or None.

    expat reads the prolog as the Office libraries would: it honours a byte-order
    mark and the declared encoding, and skips comments of any length. It stops at
    the root element, so a large part costs only its prolog. A part expat cannot
    read (empty, binary, damaged, an encoding it lacks) is decoded as well as it
    can be and searched whole, case-insensitively, for the same declarations.
    """
    from xml.parsers import expat

    parser = expat.ParserCreate()

    def doctype(*_args: object) -> None:
        if not allow_doctype:
            raise _PrologRefused("names a DTD")

    def entity(*_args: object) -> None:
        raise _PrologRefused("declares XML entities")

    def root(*_args: object) -> None:
        raise _PrologDone

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    parser.StartElementHandler = root
    try:
        for start in range(0, len(content), _PROLOG_BYTES):
            parser.Parse(content[start:start + _PROLOG_BYTES], False)
        parser.Parse(b"", True)
    except _PrologDone:
        return None
    except _PrologRefused as refused:
        return str(refused)
    except expat.ExpatError:
        return _declarations_in(content, allow_doctype=allow_doctype)
    return None


_DECLARED_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._\-]+)["']""")


def _declarations_in(content: bytes, *, allow_doctype: bool) -> str | None:
    from sluice.parsing.text import bom_encoding

    found = bom_encoding(content)
    declared = _DECLARED_ENCODING.match(content[:1024])
    if found is not None:
        encoding = found[0]
    elif declared is not None:
        encoding = declared.group(1).decode("ascii")
    else:
        encoding = "utf-16" if content[:2] in (b"<\x00", b"\x00<") else "utf-8"
    try:
        text = content.decode(encoding, "replace").lower()
    except LookupError:
        text = content.decode("latin-1").lower()
    if "<!entity" in text:
        return "declares XML entities"
    if not allow_doctype and "<!doctype" in text:
        return "names a DTD"
    return None


def zip_container_is_encrypted_odf(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            manifest = archive.read("META-INF/manifest.xml")
    except (KeyError, zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError):
        return False
    return b"encryption-data" in manifest


def member_source_path(archive_path: str, member_path: str) -> str:
    """``source_path`` of a document unpacked from an archive (R-ARC-2)."""
    return f"{archive_path}!/{posixpath.normpath(member_path)}"
