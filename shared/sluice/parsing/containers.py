"""Office and OpenDocument files are zip containers (R-ARC-3): their libraries decompress every
part before reading a word, so the archive limits guard them too (``check_container``), and so does
the XML rule: OOXML never carries a DTD, and ODF may name one but never declares entities."""

from __future__ import annotations

import contextlib
import io
import re
import zipfile

from sluice.errors import ParseError
from sluice.parsing.archive_limits import Tally, show_path
from sluice.parsing.archives import open_zip, read_zip_member
from sluice.parsing.budget import ParseBudget

# How much of an XML part's prolog is handed to the parser at a time.
_PROLOG_BYTES = 1 << 16


def check_container(data: bytes, budget: ParseBudget, label: str, *, odf: bool) -> None:
    """Entry, size, ratio and member limits for a .docx/.xlsx/.pptx/.odt/.ods/.odp, plus the
    XML rule: OOXML never carries a DTD, and ODF may name one but never declares entities.

    The rule is checked on every part the Office libraries parse as XML (by name, and by the
    package's own content types), on its prolog as an XML parser reads it: whatever its
    encoding (UTF-16 included), however long a comment comes first.
    """
    tally = Tally(budget=budget, outer_size=len(data), label=label)
    archive = open_zip(data, tally)
    for info in archive.infolist():
        tally.count_entry()
        tally.declared(info.filename, info.file_size)
    xml_types = _XmlParts()
    # The content types first: they say which other parts the libraries read as XML.
    for info in sorted(archive.infolist(), key=lambda i: i.filename != _CONTENT_TYPES):
        if info.is_dir():
            continue
        content = read_zip_member(archive, info, info.filename, tally)
        if not xml_types.holds(info.filename):
            continue
        problem = xml_prolog_problem(content, allow_doctype=odf)
        if problem is not None:
            raise ParseError(
                f"{label} was refused: its part {show_path(info.filename)} {problem}, which Office files never "
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
