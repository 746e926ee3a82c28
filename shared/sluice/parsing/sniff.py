"""Deciding a file's kind by its content and its name together (R-UP-6).

The extension says what the file claims to be; the bytes decide. People save
files under the wrong name all the time, so a file whose content is another
supported kind (an .xlsx that is an .xls, a .doc that is a .docx, a .pdf that is
an HTML page) is read as what it is, with a note saying so. A file whose content
is no supported kind, or cannot be identified where its name promises a binary
format (a renamed program, a damaged container), is refused with a sentence
naming both. Archive content is read as an archive only under an archive's name:
a zip named as a document is refused, never unpacked.
"""

from __future__ import annotations

import io
import zlib

from sluice.errors import EncryptedDocumentError, UnsupportedTypeError
from sluice.parsing.kinds import (
    EXTENSION_KINDS,
    SPECS,
    FileKind,
    extension_of,
    kind_for,
    primary_extension,
    supported_list,
)
from sluice.parsing.text import bomless_unicode
from sluice.parsing.zip_directory import (
    ZipDirectoryError,
    find_entry,
    read_entry_head,
    read_zip_directory,
)

OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
GZIP_MAGIC = b"\x1f\x8b"
# BIFF2..BIFF5 workbooks written as a bare record stream rather than inside OLE2
# (Excel 2.x-4.0): they start with a BOF record, which xlrd reads.
BIFF_BOF = (b"\x09\x00", b"\x09\x02", b"\x09\x04", b"\x09\x08")

# Enough directory records to find a main part, without reading a huge directory.
_SNIFF_MAX_ENTRIES = 100_000
_HEAD_BYTES = 1 << 20

OOXML_MAIN_TYPES = {
    "docx": b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
    "docm": b"application/vnd.ms-word.document.macroEnabled.main+xml",
    "xlsx": b"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
    "xlsm": b"application/vnd.ms-excel.sheet.macroEnabled.main+xml",
    "pptx": b"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
    "pptm": b"application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml",
}
ODF_MIMES = {
    "odt": b"application/vnd.oasis.opendocument.text",
    "ods": b"application/vnd.oasis.opendocument.spreadsheet",
    "odp": b"application/vnd.oasis.opendocument.presentation",
}
_OOXML_KINDS = set(OOXML_MAIN_TYPES)
_ODF_KINDS = set(ODF_MIMES)
_TEXT_KINDS = {"txt", "md", "csv", "json", "xml", "html"}

# Signatures of things a user might rename, named the way the refusal says them.
_FOREIGN_MAGICS: list[tuple[bytes, str]] = [
    (b"MZ", "a Windows program (.exe or .dll)"),
    (b"\x7fELF", "a Linux program"),
    (b"\xcf\xfa\xed\xfe", "a macOS program"),
    (b"\xfe\xed\xfa\xcf", "a macOS program"),
    (b"\xca\xfe\xba\xbe", "a macOS program or Java class"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"BZh", "a bzip2-compressed file"),
    (b"\xfd7zXZ\x00", "an xz-compressed file"),
    (b"{\\rtf", "an RTF document"),
    (b"%!PS", "a PostScript file"),
    (b"\xffWPC", "a WordPerfect document, which Sluice does not read"),
    (b"\x31\xbe\x00\x00", "a Word for DOS or Windows Write document, which Sluice does not read"),
    (b"\x32\xbe\x00\x00", "a Windows Write document, which Sluice does not read"),
    (b"\xdb\xa5\x2d\x00", "a Word 2.0 document, which Sluice does not read"),
    (b"\x00\x00\x01\x00", "an icon file"),
    (b"ID3", "an MP3 audio file"),
    (b"OggS", "an Ogg media file"),
    (b"\x1aE\xdf\xa3", "a Matroska/WebM video"),
    (b"SQLite format 3\x00", "an SQLite database"),
]

_TEXT_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
_BINARY_SAMPLE = 8192


def sniff(data: bytes, filename: str) -> FileKind:
    extension = extension_of(filename)
    kind = EXTENSION_KINDS.get(extension)
    if kind is None:
        looks = describe(data)
        named = f"{extension} files" if extension else "files without an extension"
        looks_part = f" This one looks like {looks}." if looks else ""
        raise UnsupportedTypeError(f"Sluice cannot read {named}.{looks_part} Supported types: {supported_list()}.")
    try:
        _confirm(data, kind, extension, filename)
    except UnsupportedTypeError:
        actual = identify(data)
        if actual is None or actual == kind or not _may_read_as(kind, actual):
            raise
        return _read_as(actual, filename, kind)
    if kind == "zip":
        # A .docx, .xlsx or .odt is a zip too: renamed .zip, it is still read as the document it is.
        actual = identify(data)
        if actual is not None and actual != "zip":
            return _read_as(actual, filename, kind)
    return kind_for(kind, extension)


def _read_as(actual: str, filename: str, named: str) -> FileKind:
    return kind_for(actual, primary_extension(actual), note=_read_as_note(filename, named, actual))


def _may_read_as(named: str, actual: str) -> bool:
    """Archive content is unpacked only under an archive's name (another archive's will do): a zip
    named .docx is a damaged document or a disguise, never a folder of members to index."""
    return SPECS[actual].family != "archive" or SPECS[named].family == "archive"


def _read_as_note(filename: str, named: str, actual: str) -> str:
    return f"{_base_name(filename)} is named as {SPECS[named].label} but is {SPECS[actual].label}: it was read as one."


def is_pdf(data: bytes) -> bool:
    """A PDF's header opens its first KB, or, under a .pdf name, follows leading garbage within the
    first MiB (a mail gateway's bytes, a broken uploader's): the reader starts from the header."""
    if b"%PDF-" in data[:1024]:
        return True
    # Deeper in, only when the bytes are nothing else: a zip storing a PDF is a zip.
    return b"%PDF-" in data[: 1 << 20] and identify(data) is None


def identify(data: bytes) -> str | None:
    """The supported kind the bytes are, whatever the name says; None when they are none that can be
    told from content alone (plain text is told apart from other text kinds only by its name)."""
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(OLE2_MAGIC):
        found = ole2_kind(_ole_streams(data) or [])
        return found if found in SPECS else None
    if is_zip(data):
        content_types = _zip_member_head(data, "[Content_Types].xml")
        if content_types is not None:
            return next((k for k, main in OOXML_MAIN_TYPES.items() if main in content_types), None)
        mimetype = _zip_member_head(data, "mimetype")
        if mimetype is not None:
            return next((k for k, mime in ODF_MIMES.items() if _is_odf(mimetype, mime)), None)
        return "zip"
    if data.startswith(GZIP_MAGIC):
        try:
            head = zlib.decompressobj(31).decompress(data[:65536], 512)
        except zlib.error:
            return None
        return "tar.gz" if looks_like_tar(head) else None
    image = image_kind(data)
    if image:
        return image
    if looks_binary(data):
        return None
    return _markup_kind(data)


def _markup_kind(data: bytes) -> str | None:
    """HTML or XML by how the text opens (after a byte-order mark and white space)."""
    head = data[:1024].lstrip(b"\xef\xbb\xbf").lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")):
        return "html"
    if head.startswith(b"<?xml"):
        return "xml"
    return None


def _base_name(filename: str) -> str:
    return filename.replace("\\", "/").rsplit("/", 1)[-1] or "The file"


def _refuse(filename: str, kind: str, data: bytes, why: str | None = None) -> UnsupportedTypeError:
    label = SPECS[kind].label
    name = _base_name(filename)
    if why is None:
        looks = describe(data)
        why = f"it looks like {looks}" if looks else "its content does not match that type"
    return UnsupportedTypeError(f"{name} is named as {label}, but {why}.")


def _confirm(data: bytes, kind: str, extension: str, filename: str) -> None:
    family = SPECS[kind].family
    if not data and family != "text":
        raise _refuse(filename, kind, data, "the file is empty")
    if kind == "pdf":
        if not is_pdf(data):
            raise _refuse(filename, kind, data)
    elif kind in ("doc", "xls", "msg"):
        _confirm_ole2(data, kind, filename)
    elif kind in _OOXML_KINDS:
        _confirm_ooxml(data, kind, filename)
    elif kind in _ODF_KINDS:
        _confirm_odf(data, kind, filename)
    elif kind == "zip":
        if not is_zip(data):
            raise _refuse(filename, kind, data)
    elif kind == "tar.gz":
        _confirm_tar_gz(data, filename)
    elif family == "image":
        if image_kind(data) != kind:
            raise _refuse(filename, kind, data)
    elif kind in _TEXT_KINDS:
        _confirm_text(data, kind, filename)


def _ole_streams(data: bytes) -> list[str] | None:
    import olefile

    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            return ["/".join(path) for path in ole.listdir(streams=True, storages=True)]
    except Exception:  # olefile raises plain OSError/ValueError/IndexError on damaged files
        return None


def _confirm_ole2(data: bytes, kind: str, filename: str) -> None:
    if kind == "xls" and data[:2] in BIFF_BOF:
        return
    if not data.startswith(OLE2_MAGIC):
        raise _refuse(filename, kind, data)
    streams = _ole_streams(data)
    if streams is None:
        raise _refuse(filename, kind, data, "its Office container is damaged and cannot be opened")
    found = ole2_kind(streams)
    if found == "encrypted-ooxml":
        # A password-protected .docx/.xlsx/.pptx under a legacy name: the password is what stops it.
        raise EncryptedDocumentError(
            "This file is an Office document protected with a password. Remove the password and upload it again."
        )
    if found != kind:
        looks = _ole2_label(found)
        raise _refuse(filename, kind, data, f"it looks like {looks}")


def ole2_kind(streams: list[str]) -> str | None:
    lowered = {s.lower() for s in streams}
    if "worddocument" in lowered:
        return "doc"
    if "workbook" in lowered or "book" in lowered:
        return "xls"
    if "__properties_version1.0" in lowered or any(s.startswith("__substg1.0_") for s in lowered):
        return "msg"
    if "encryptedpackage" in lowered:
        return "encrypted-ooxml"
    if "powerpoint document" in lowered:
        return "ppt"
    return None


def _ole2_label(found: str | None) -> str:
    return {
        "doc": "a legacy Word document (.doc)",
        "xls": "a legacy Excel workbook (.xls)",
        "msg": "an Outlook message (.msg)",
        "encrypted-ooxml": "a password-protected Office document",
        "ppt": "a legacy PowerPoint presentation (.ppt), which Sluice does not read",
        None: "an Office (OLE2) file of a kind Sluice does not read",
    }[found]


def _confirm_ooxml(data: bytes, kind: str, filename: str) -> None:
    if data.startswith(OLE2_MAGIC):
        # A password-protected .docx/.xlsx/.pptx is an OLE2 box around an EncryptedPackage:
        # let extract() refuse it as encrypted, which tells the user what to do.
        if ole2_kind(_ole_streams(data) or []) == "encrypted-ooxml":
            return
        raise _refuse(filename, kind, data)
    if not is_zip(data):
        raise _refuse(filename, kind, data)
    content_types = _zip_member_head(data, "[Content_Types].xml")
    if content_types is None:
        raise _refuse(filename, kind, data, "it is a zip archive without the parts of an Office document")
    if OOXML_MAIN_TYPES[kind] in content_types:
        return
    for other, main_type in OOXML_MAIN_TYPES.items():
        if main_type in content_types:
            raise _refuse(filename, kind, data, f"it looks like {SPECS[other].label}")
    raise _refuse(filename, kind, data, f"it is an Office package without the main part of {SPECS[kind].label}")


def _confirm_odf(data: bytes, kind: str, filename: str) -> None:
    if not is_zip(data):
        raise _refuse(filename, kind, data)
    mimetype = _zip_member_head(data, "mimetype")
    if mimetype is None:
        # Some writers (KOffice) leave out the mimetype member; the manifest still names it.
        manifest = _zip_member_head(data, "META-INF/manifest.xml") or b""
        mimetype = manifest if b'manifest:full-path="/"' in manifest else None
    if mimetype is None:
        raise _refuse(filename, kind, data, "it is a zip archive without the parts of an OpenDocument file")
    if _is_odf(mimetype, ODF_MIMES[kind]):
        return
    for other, mime in ODF_MIMES.items():
        if mime in mimetype:
            raise _refuse(filename, kind, data, f"it looks like {SPECS[other].label}")
    raise _refuse(filename, kind, data, "it is an OpenDocument file of a kind Sluice does not read")


def _is_odf(mimetype: bytes, mime: bytes) -> bool:
    """The document itself, not its template (an .ott is no .odt)."""
    return mime in mimetype and mime + b"-template" not in mimetype


def is_zip(data: bytes) -> bool:
    """A zip is found by its end record: self-extractors and split-archive markers put bytes
    before the first local header, and zipfile reads those archives as they are."""
    if data.startswith(ZIP_MAGICS):
        return True
    try:
        read_zip_directory(data, 1)
    except ZipDirectoryError:
        return False
    return True


def _zip_member_head(data: bytes, name: str) -> bytes | None:
    try:
        directory = read_zip_directory(data, _SNIFF_MAX_ENTRIES)
        entry = find_entry(directory, name)
        if entry is None:
            return None
        return read_entry_head(data, directory, entry, _HEAD_BYTES)
    except ZipDirectoryError:
        return None


def _confirm_tar_gz(data: bytes, filename: str) -> None:
    if not data.startswith(GZIP_MAGIC):
        why = None
        if looks_like_tar(data[:512]):
            why = "it is an uncompressed tar archive, not a gzip-compressed one"
        raise _refuse(filename, "tar.gz", data, why)
    try:
        head = zlib.decompressobj(31).decompress(data[:65536], 512)
    except zlib.error:
        raise _refuse(filename, "tar.gz", data, "its gzip stream is damaged") from None
    if not looks_like_tar(head):
        raise _refuse(filename, "tar.gz", data, "it is a gzip-compressed file that is not a tar archive")


def looks_like_tar(block: bytes) -> bool:
    if len(block) < 512:
        return False
    if block[257:262] == b"ustar":
        return True
    # Pre-POSIX (v7) headers have no magic: their checksum field is the proof.
    try:
        stored = int(block[148:156].replace(b"\x00", b" ").strip() or b"-1", 8)
    except ValueError:
        return False
    unsigned = sum(block[:148]) + 8 * 32 + sum(block[156:512])
    return stored == unsigned


def image_kind(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data.startswith((b"II*\x00", b"MM\x00*")):
        return "tif"
    return None


def describe(data: bytes) -> str | None:
    """What the bytes look like, as a noun phrase for a refusal; None when nothing is recognised."""
    if not data:
        return "an empty file"
    if data.startswith(b"%PDF-"):
        return "a PDF"
    if data.startswith(OLE2_MAGIC):
        return _ole2_label(ole2_kind(_ole_streams(data) or []))
    if is_zip(data):
        content_types = _zip_member_head(data, "[Content_Types].xml")
        if content_types:
            for kind, main_type in OOXML_MAIN_TYPES.items():
                if main_type in content_types:
                    return SPECS[kind].label
            return "an Office package of a kind Sluice does not read"
        mimetype = _zip_member_head(data, "mimetype")
        if mimetype:
            for kind, mime in ODF_MIMES.items():
                if mime in mimetype:
                    return SPECS[kind].label
            if b"epub" in mimetype:
                return "an EPUB e-book"
        return "a zip archive"
    if data.startswith(GZIP_MAGIC):
        return "a gzip-compressed file"
    if looks_like_tar(data[:512]):
        return "a tar archive"
    image = image_kind(data)
    if image:
        return SPECS[image].label
    for magic, label in _FOREIGN_MAGICS:
        if data.startswith(magic):
            return label
    if looks_binary(data):
        return "binary data rather than text"
    return None


def looks_binary(data: bytes) -> bool:
    """True when the sample is not text in any byte encoding: NULs or many control bytes.

    A UTF-16/32 text carries NULs by design, so a byte-order mark, or the NUL pattern of such
    text without one, exempts it. A stray NUL
    in real text is tolerated (R-PARSE-2 removes it); a sample made of them is not text.
    """
    if data.startswith(_TEXT_BOMS) or bomless_unicode(data) is not None:
        return False
    sample = data[:_BINARY_SAMPLE]
    if not sample:
        return False
    nuls = sample.count(0)
    controls = sum(sample.count(c) for c in range(32) if c not in (9, 10, 12, 13, 27)) - nuls
    return nuls > len(sample) // 100 or (nuls + controls) > len(sample) // 10


def _confirm_text(data: bytes, kind: str, filename: str) -> None:
    if not data:
        return
    # Only signatures that no text starts with by accident ("MZ" or "ID3" could open a line of prose;
    # a real program or MP3 is caught by its binary bytes instead).
    strong = (b"%PDF-", OLE2_MAGIC, GZIP_MAGIC, b"{\\rtf", b"%!PS", b"7z\xbc\xaf", b"Rar!", b"\x7fELF", *ZIP_MAGICS)
    if data.startswith(strong) or image_kind(data) or looks_binary(data):
        raise _refuse(filename, kind, data)
