"""Word documents (.docx, .docm): paragraphs and table cells in document order (SPEC §4).

python-docx opens the package and resolves its parts; the text is collected by
walking the WordprocessingML itself, because ``Paragraph.text`` leaves out text
boxes, content controls and fields, and python-docx has no reader for footnotes.
After the body come headers and footers, footnotes, endnotes and comments, each
part once. Tables become one line per row, cells separated by tabs.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

from sluice.errors import ParseError
from sluice.parsing.budget import ParseBudget, TextBudget
from sluice.parsing.document import ParsedDocument
from sluice.parsing.packages import without_dangling_relationships
from sluice.parsing.strict_ooxml import as_transitional

log = logging.getLogger(__name__)

_DOCM_MAIN = "application/vnd.ms-word.document.macroEnabled.main+xml"
_RELTYPE_TAILS = ("/header", "/footer", "/footnotes", "/endnotes", "/comments")
_CELL_SEPARATOR = "\t"


def _local(tag: Any) -> str:
    if not isinstance(tag, str):
        return ""  # comments and processing instructions
    return tag.rsplit("}", 1)[-1]


class _Stop(Exception):
    pass


def _register_macro_enabled() -> None:
    # python-docx only maps the .docx main content type to DocumentPart; a .docm's main
    # part is the same WordprocessingML under another content type.
    import docx  # noqa: F401  (registers python-docx's own part classes first)
    from docx.opc.part import PartFactory
    from docx.parts.document import DocumentPart

    PartFactory.part_type_for.setdefault(_DOCM_MAIN, DocumentPart)


def read_docx(data: bytes, budget: ParseBudget) -> ParsedDocument:
    _register_macro_enabled()
    from docx.opc.package import OpcPackage

    try:
        data = as_transitional(data)
        package = OpcPackage.open(io.BytesIO(data))
    except KeyError:
        # A relationship to a part the package does not hold (an optional webSettings.xml left out).
        package = _open_without_dangling(OpcPackage, data)
    except Exception as exc:
        log.info("python-docx could not open the document: %s", exc)
        raise _damaged() from None
    try:
        main = package.main_document_part
        body_root = _element_of(main)
    except Exception as exc:
        log.info("python-docx found no main document part: %s", exc)
        raise _damaged() from None
    text = TextBudget(budget.max_chars)
    try:
        _emit(_blocks(body_root, main), text)
        seen: set[str] = set()
        for rel in list(main.rels.values()):
            if rel.is_external or not rel.reltype.endswith(_RELTYPE_TAILS):
                continue
            part = rel.target_part
            if str(part.partname) in seen:
                continue
            seen.add(str(part.partname))
            _emit(_blocks(_element_of(part), part), text)
    except _Stop:
        pass
    except RecursionError:
        raise ParseError("This Word document nests its content too deeply to be read.") from None
    return text.finish()


def _damaged() -> ParseError:
    return ParseError("This Word document could not be read: the file is damaged or incomplete.")


def _open_without_dangling(opener: Any, data: bytes) -> Any:
    try:
        repaired = without_dangling_relationships(data)
        if repaired is None:
            raise _damaged()
        return opener.open(io.BytesIO(repaired))
    except ParseError:
        raise
    except Exception as exc:
        log.info("python-docx could not open the document without its dangling relationships: %s", exc)
        raise _damaged() from None


def _element_of(part: Any) -> Any:
    element = getattr(part, "element", None)
    if element is not None:
        return element
    from docx.oxml.parser import parse_xml

    return parse_xml(part.blob)


def _emit(blocks: Iterator[str], text: TextBudget) -> None:
    for block in blocks:
        if not block.strip():
            continue
        text.separate("\n")
        if not text.add(block.rstrip()):
            raise _Stop


def _blocks(element: Any, part: Any) -> Iterator[str]:
    """Lines of text under a body-like element: paragraphs, table rows, nested content."""
    for child in element:
        name = _local(child.tag)
        if name == "p":
            line, boxes = _paragraph(child)
            yield line
            for box in boxes:
                yield from _blocks(box, part)
        elif name == "tbl":
            for row in _wrapped(child, "tr"):
                cells = [_cell_text(cell, part) for cell in _wrapped(row, "tc")]
                yield _CELL_SEPARATOR.join(cells)
        elif name == "altChunk":
            yield from _alt_chunk(child, part)
        elif name == "AlternateContent":
            chosen = _choice(child)
            if chosen is not None:
                yield from _blocks(chosen, part)
        elif name in ("sdt", "sdtContent", "customXml", "smartTag", "ins", "moveTo", "txbxContent",
                      "footnote", "endnote", "comment", "hdr", "ftr", "body", "footnotes",
                      "endnotes", "comments"):  # fmt: skip
            yield from _blocks(child, part)


# What may wrap a table's rows, or a row's cells, without being one: content controls (Word's cover
# pages and form templates put every cell in one), custom XML and tracked insertions.
_ROW_WRAPPERS = ("sdt", "sdtContent", "customXml", "ins", "moveTo")


def _wrapped(element: Any, name: str) -> Iterator[Any]:
    """The ``name`` children of ``element``, including those inside wrappers."""
    for child in element:
        local = _local(child.tag)
        if local == name:
            yield child
        elif local in _ROW_WRAPPERS:
            yield from _wrapped(child, name)


def _choice(alternate: Any) -> Any:
    # mc:AlternateContent repeats the same content as Choice and Fallback: read one.
    for child in alternate:
        if _local(child.tag) == "Choice":
            return child
    for child in alternate:
        if _local(child.tag) == "Fallback":
            return child
    return None


def _cell_text(cell: Any, part: Any) -> str:
    lines = [line.strip() for line in _blocks(cell, part)]
    return " ".join(line for line in lines if line).replace("\t", " ")


def _paragraph(paragraph: Any) -> tuple[str, list[Any]]:
    """A paragraph's text and the text boxes anchored in it (read after it, as their own lines)."""
    pieces: list[str] = []
    boxes: list[Any] = []
    stack = [iter(paragraph)]
    while stack:
        try:
            node = next(stack[-1])
        except StopIteration:
            stack.pop()
            continue
        name = _local(node.tag)
        if name == "t":
            pieces.append(node.text or "")
        elif name == "tab":
            pieces.append("\t")
        elif name in ("br", "cr"):
            pieces.append("\n")
        elif name == "noBreakHyphen":
            pieces.append("-")
        elif name == "txbxContent":
            boxes.append(node)
        elif name == "AlternateContent":
            chosen = _choice(node)
            if chosen is not None:
                stack.append(iter(chosen))
        elif name in ("delText", "instrText", "delInstrText", "Fallback"):
            continue  # deleted revisions and field codes are not the document's text
        elif len(node):
            stack.append(iter(node))
    return "".join(pieces), boxes


def _alt_chunk(chunk: Any, part: Any) -> Iterator[str]:
    """w:altChunk imports another file (usually HTML) into the body at this point."""
    from sluice.parsing.text import decode_text, html_encoding, html_text

    rid = next((v for k, v in chunk.attrib.items() if _local(k) == "id"), None)
    try:
        target = part.related_parts[rid]
    except (KeyError, AttributeError):
        return
    blob = target.blob
    content_type = getattr(target, "content_type", "")
    inner = TextBudget(len(blob) + 1)
    if "html" in content_type:
        html_text(decode_text(blob, allow_legacy=True, declared=html_encoding(blob), prefer_utf8=True), inner)
    elif content_type.startswith("text/"):
        inner.add(decode_text(blob, allow_legacy=True))
    else:
        return
    yield from inner.finish().text.splitlines()
