"""OpenDocument text, spreadsheets and presentations (.odt .ods .odp) with odfpy (SPEC §4).

odfpy's own ``load()`` also parses every embedded object, and refuses the whole
file when one of them names a DTD (LibreOffice formulas carry
``<!DOCTYPE math:math … "math.dtd">``). Sluice loads only ``content.xml`` and
``styles.xml`` into odfpy's document model, with odfpy's ``LoadParser`` behind a
defusedxml parser that refuses entity declarations and never loads anything
external; a named DTD is simply not read. Master pages (``styles.xml``) carry
the headers and footers, read after the body. Embedded objects (a chart, a text
frame: ``Object 1/content.xml``) are loaded the same way and read where they stand.
"""

from __future__ import annotations

import io
import logging
import zipfile
from collections.abc import Iterator
from typing import Any

from sluice.errors import ParseError
from sluice.parsing.budget import ParseBudget, TextBudget
from sluice.parsing.document import ParsedDocument
from sluice.parsing.spreadsheet import SheetText

log = logging.getLogger(__name__)

_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_PRESENTATION = "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"
_STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
_XLINK = "http://www.w3.org/1999/xlink"

# Content that is not the document's text: deleted revisions, form controls, scripts.
_SKIP = {
    (_TEXT, "tracked-changes"),
    (_TEXT, "sequence-decls"),
    (_TEXT, "variable-decls"),
    (_TEXT, "user-field-decls"),
    (_OFFICE, "forms"),
    (_OFFICE, "scripts"),
    (_TABLE, "shapes"),
}


# Fields whose content is a cached value or a placeholder ("<number>" on a master slide).
_FIELD_PLACEHOLDERS = {
    (_TEXT, "note-citation"),
    (_TEXT, "page-number"),
    (_TEXT, "page-count"),
    (_PRESENTATION, "date-time"),
    (_PRESENTATION, "header"),
    (_PRESENTATION, "footer"),
}


class _Stop(Exception):
    pass


def _load(data: bytes) -> Any:
    from odf import opendocument

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = set(archive.namelist())
        mimetype = archive.read("mimetype").decode("ascii", "replace").strip() if "mimetype" in names else ""
    except (zipfile.BadZipFile, OSError, ValueError):
        raise ParseError("This OpenDocument file could not be read: it is not a valid zip file.") from None
    document = opendocument.OpenDocument(mimetype or "application/vnd.oasis.opendocument.text")
    for part in ("styles.xml", "content.xml"):
        if part in names:
            _parse_part(document, archive.read(part), part)
    if "spreadsheet" not in mimetype:
        # A spreadsheet's chart caches the cells it plots, which the sheets already read.
        _embed_objects(document.body, "", archive, names, [0])
    return document


def _parse_part(document: Any, raw: bytes, part: str) -> None:
    from xml.sax import handler
    from xml.sax.xmlreader import InputSource

    from defusedxml.expatreader import DefusedExpatParser
    from odf import opendocument
    from odf.load import LoadParser

    fix_part = getattr(opendocument, "__fixXmlPart", lambda part: part)
    document._parsing = part
    parser = DefusedExpatParser(forbid_dtd=False, forbid_entities=True, forbid_external=False)
    parser.setFeature(handler.feature_namespaces, 1)
    # With external general entities off, expat's reader answers a named DTD without
    # fetching it; entity declarations never get that far (forbid_entities).
    parser.setFeature(handler.feature_external_ges, 0)
    parser.setContentHandler(LoadParser(document))
    parser.setErrorHandler(handler.ErrorHandler())
    source = InputSource()
    source.setByteStream(io.BytesIO(fix_part(raw.decode("utf-8")).encode("utf-8")))
    parser.parse(source)
    del document._parsing


# Embedded objects (charts, text frames, formulas) live in their own folders ("Object 1/content.xml");
# one may embed another. The container check bounds their bytes; these bound the walk.
_MAX_OBJECT_DEPTH = 4
_MAX_OBJECTS = 256


def _embed_objects(node: Any, folder: str, archive: zipfile.ZipFile, names: set[str], count: list[int]) -> None:
    """Each ``draw:object`` that names a folder of this package gets that object's body as its child,
    so its text (a chart's title and data table, an embedded text's paragraphs) is read where it
    stands. A formula's MathML has no paragraphs and adds nothing; an OLE object is not ODF."""
    from odf import opendocument

    for element in _descendants(node, (_DRAW, "object")):
        href = (_attr(element, _XLINK, "href") or "").strip()
        if not href or "://" in href or href.startswith("/") or count[0] >= _MAX_OBJECTS:
            continue
        path = "/".join(piece for piece in f"{folder}/{href}".split("/") if piece not in ("", "."))
        if f"{path}/content.xml" not in names or path.count("/") >= _MAX_OBJECT_DEPTH:
            continue
        count[0] += 1
        embedded = opendocument.OpenDocument("application/vnd.oasis.opendocument.text")
        try:
            _parse_part(embedded, archive.read(f"{path}/content.xml"), "content.xml")
        except Exception as exc:
            # The object's text is lost, said in the log; the document around it is still read.
            log.info("odfpy could not load the embedded object %s: %s", path, exc)
            continue
        _embed_objects(embedded.body, path, archive, names, count)
        element.addElement(embedded.body, check_grammar=False)


def _descendants(node: Any, qname: tuple[str, str]) -> Iterator[Any]:
    for child in node.childNodes:
        if getattr(child, "qname", None) == qname:
            yield child
        elif getattr(child, "childNodes", None):
            yield from _descendants(child, qname)


def read_odf(data: bytes, budget: ParseBudget) -> ParsedDocument:
    from defusedxml import DefusedXmlException

    try:
        document = _load(data)
    except DefusedXmlException:
        raise ParseError(
            "This OpenDocument file declares XML entities, which is how entity-expansion and "
            "external-file attacks are built; Sluice does not read it."
        ) from None
    except ParseError:
        raise
    except Exception as exc:
        log.info("odfpy could not load the document: %s", exc)
        raise ParseError("This OpenDocument file could not be read: the file is damaged or incomplete.") from None
    text = TextBudget(budget.max_chars)
    try:
        body = document.body
        spreadsheet = _first(body, (_OFFICE, "spreadsheet"))
        presentation = _first(body, (_OFFICE, "presentation"))
        if spreadsheet is not None:
            _spreadsheet(spreadsheet, text, budget)
        elif presentation is not None:
            _presentation(presentation, text)
        else:
            _emit(_blocks(body), text)
        _emit(_blocks(document.masterstyles), text, dedupe=True)
    except _Stop:
        pass
    return text.finish()


def _first(node: Any, qname: tuple[str, str]) -> Any:
    for child in node.childNodes:
        if getattr(child, "qname", None) == qname:
            return child
    return None


def _children(node: Any, qname: tuple[str, str]) -> Iterator[Any]:
    for child in node.childNodes:
        if getattr(child, "qname", None) == qname:
            yield child


def _attr(node: Any, namespace: str, name: str) -> str | None:
    value = node.attributes.get((namespace, name))
    return None if value is None else str(value)


def _emit(blocks: Iterator[str], text: TextBudget, dedupe: bool = False) -> None:
    seen: set[str] = set()
    for block in blocks:
        line = block.rstrip()
        if not line.strip() or (dedupe and line in seen):
            continue
        seen.add(line)
        text.separate("\n")
        if not text.add(line):
            raise _Stop


def _blocks(node: Any) -> Iterator[str]:
    """Lines under ``node``: paragraphs and headings, table rows, frames and notes after them."""
    for child in node.childNodes:
        qname = getattr(child, "qname", None)
        if qname is None or qname in _SKIP:
            continue
        if qname in ((_TEXT, "p"), (_TEXT, "h")):
            line, nested = _paragraph(child)
            yield line
            for inner in nested:
                yield from _blocks(inner)
        elif qname == (_TABLE, "table"):
            yield from _table_rows(child)
        else:
            yield from _blocks(child)


def _paragraph(node: Any) -> tuple[str, list[Any]]:
    pieces: list[str] = []
    nested: list[Any] = []
    _inline(node, pieces, nested)
    return "".join(pieces), nested


def _inline(node: Any, pieces: list[str], nested: list[Any]) -> None:
    for child in node.childNodes:
        if child.nodeType == child.TEXT_NODE:
            pieces.append(child.data)
            continue
        qname = getattr(child, "qname", None)
        if qname == (_TEXT, "s"):
            pieces.append(" " * int(_attr(child, _TEXT, "c") or 1))
        elif qname == (_TEXT, "tab"):
            pieces.append("\t")
        elif qname == (_TEXT, "line-break"):
            pieces.append("\n")
        elif qname in ((_TEXT, "note"), (_OFFICE, "annotation"), (_DRAW, "frame"), (_DRAW, "custom-shape")):
            nested.append(child)  # footnotes, comments and text boxes: their own lines, after
        elif qname in _SKIP or qname in _FIELD_PLACEHOLDERS:
            continue
        else:
            _inline(child, pieces, nested)


def _cell_text(cell: Any) -> str:
    return " ".join(line.strip() for line in _blocks(cell) if line.strip()).replace("\t", " ")


def _table_rows(table: Any) -> Iterator[str]:
    for row in _rows(table):
        cells: list[str] = []
        for cell in _cells(row):
            repeat = int(_attr(cell, _TABLE, "number-columns-repeated") or 1)
            value = _cell_text(cell)
            cells.extend([value] * (min(repeat, 64) if value else 1))
        yield "\t".join(cells).rstrip("\t")


def _rows(table: Any) -> Iterator[Any]:
    for child in table.childNodes:
        qname = getattr(child, "qname", None)
        if qname == (_TABLE, "table-row"):
            yield child
        elif qname in ((_TABLE, "table-rows"), (_TABLE, "table-header-rows"), (_TABLE, "table-row-group")):
            yield from _rows(child)


def _cells(row: Any) -> Iterator[Any]:
    for child in row.childNodes:
        if getattr(child, "qname", None) in ((_TABLE, "table-cell"), (_TABLE, "covered-table-cell")):
            yield child


def _spreadsheet(spreadsheet: Any, text: TextBudget, budget: ParseBudget) -> None:
    sheets = SheetText(text, budget.sheet_max_cells)
    for table in _children(spreadsheet, (_TABLE, "table")):
        sheets.sheet(_attr(table, _TABLE, "name") or "Sheet")
        row_number = 0
        for row in _rows(table):
            rows_repeat = int(_attr(row, _TABLE, "number-rows-repeated") or 1)
            values: list[tuple[int, object]] = []
            column = 0
            for cell in _cells(row):
                repeat = int(_attr(cell, _TABLE, "number-columns-repeated") or 1)
                value = _cell_text(cell)
                if value:
                    # A repeated filled cell is real content; a repeated empty one is how
                    # ODF writes "nothing until column 16384" and costs nothing here.
                    for offset in range(min(repeat, sheets.cells_left())):
                        values.append((column + offset + 1, value))
                column += repeat
            if not values:
                row_number += rows_repeat
                continue
            for _ in range(min(rows_repeat, max(sheets.cells_left(), 1))):
                row_number += 1
                if not sheets.row(values):
                    raise _Stop
    sheets.finish()


def _presentation(presentation: Any, text: TextBudget) -> None:
    for number, page in enumerate(_children(presentation, (_DRAW, "page")), start=1):
        text.separate("\n\n")
        text.start_page(number)
        try:
            _emit(_blocks(page), text)
        finally:
            text.end_page()
