"""OPC packages (.docx, .xlsx, .pptx) that name parts they do not hold.

Writers leave out optional parts (``webSettings.xml``, a thumbnail, custom XML) and keep
the relationships that name them; python-docx and python-pptx then refuse the whole
package. The package with those relationships dropped is what a reader can open: its
main part, if present, is read as it is, and a missing main part still fails.
"""

from __future__ import annotations

import functools
import io
import posixpath
import re
import zipfile

_RELATIONSHIP = re.compile(rb"<(?:\w+:)?Relationship\b[^>]*?/>", re.DOTALL)
_ATTRIBUTE = re.compile(rb'\b(Target|TargetMode)\s*=\s*"([^"]*)"')


def without_dangling_relationships(data: bytes) -> bytes | None:
    """The package with every internal relationship to an absent part left out; None when none is."""
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        names = set(source.namelist())
        rewritten: dict[str, bytes] = {}
        for name in names:
            if not name.endswith(".rels"):
                continue
            # "word/_rels/document.xml.rels" relates "word/document.xml": targets are relative to "word/".
            base = posixpath.dirname(posixpath.dirname(name))
            content = source.read(name)
            kept = _RELATIONSHIP.sub(functools.partial(_keep, base=base, names=names), content)
            if kept != content:
                rewritten[name] = kept
        if not rewritten:
            return None
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
            for item in source.infolist():
                target.writestr(item, rewritten.get(item.filename) or source.read(item))
    return out.getvalue()


def _keep(match: re.Match[bytes], *, base: str, names: set[str]) -> bytes:
    return b"" if _dangles(match.group(0), base, names) else match.group(0)


def _dangles(relationship: bytes, base: str, names: set[str]) -> bool:
    attributes = {key: value for key, value in _ATTRIBUTE.findall(relationship)}
    if attributes.get(b"TargetMode") == b"External" or b"Target" not in attributes:
        return False
    target = attributes[b"Target"].decode("utf-8", "replace").split("#", 1)[0]
    path = target.lstrip("/") if target.startswith("/") else posixpath.join(base, target)
    return posixpath.normpath(path).lstrip("/") not in names
