"""ISO/IEC 29500 Strict Office Open XML, read as Transitional.

Excel, Word and PowerPoint can save "Strict Open XML": the same parts under other namespace URIs
(``http://purl.oclc.org/ooxml/spreadsheetml/main`` for
``http://schemas.openxmlformats.org/spreadsheetml/2006/main``, and so on). openpyxl, python-docx and
python-pptx know only the Transitional names: openpyxl opened a Strict workbook and saw no cell at
all, so the file was indexed as empty. The names map one to one, so the package's XML parts are
rewritten to the Transitional names before the reader opens it; a Transitional file is untouched.
"""

from __future__ import annotations

import io
import re
import zipfile

_ROOT_RELS = "_rels/.rels"
_STRICT_MARK = b"http://purl.oclc.org/ooxml/"
# http://purl.oclc.org/ooxml/<area>/<name> -> http://schemas.openxmlformats.org/<area>/2006/<name>
_STRICT_URI = re.compile(rb"http://purl\.oclc\.org/ooxml/([A-Za-z]+)/([A-Za-z/]+)")
# The two names Transitional spells with a hyphen (parts and relationship types alike).
_HYPHENATED = {b"extendedProperties": b"extended-properties", b"customProperties": b"custom-properties"}
_XML_PART = (".xml", ".rels")


def _transitional(match: re.Match[bytes]) -> bytes:
    area, rest = match.group(1), match.group(2)
    parts = [_HYPHENATED.get(p, p) for p in rest.split(b"/")]
    return b"http://schemas.openxmlformats.org/" + area + b"/2006/" + b"/".join(parts)


def is_strict(data: bytes) -> bool:
    """Whether the package's root relationships use the Strict names."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            return _STRICT_MARK in package.read(_ROOT_RELS)
    except (KeyError, zipfile.BadZipFile, OSError, EOFError, NotImplementedError):
        return False  # no root relationships: the reader itself says what is wrong


def as_transitional(data: bytes) -> bytes:
    """The package with every XML part's Strict names replaced by Transitional ones (``data``
    itself when the package is not Strict)."""
    if not is_strict(data):
        return data
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename.endswith(_XML_PART):
                content = _STRICT_URI.sub(_transitional, content)
            target.writestr(item.filename, content)
    return out.getvalue()
