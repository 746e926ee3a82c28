"""Workbooks: every sheet named, rows tab-separated, cells counted (SPEC §4, R-PARSE-1).

An .xlsx is streamed row by row and costs what its real cells cost: openpyxl's
read-only rows are padded out to the sheet's *declared* dimension, so a sheet
that declares ``A1:XFD1048576`` around three cells would cost sixteen
thousand columns by a million rows. Sluice reads the sheet XML with openpyxl's
own row parser instead, which yields only the cells that exist.
"""

from __future__ import annotations

import datetime as dt
import io
import logging
from typing import Any

from sluice.errors import EncryptedDocumentError, ParseError
from sluice.parsing.budget import ParseBudget, TextBudget
from sluice.parsing.document import ParsedDocument
from sluice.parsing.strict_ooxml import as_transitional

log = logging.getLogger(__name__)

# Empty columns between two cells are kept as tabs (columns stay aligned) up to this many;
# a wider gap is one tab, so a cell in column XFD cannot spend the budget on tabs.
_MAX_GAP = 64


def _cell_string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return " ".join(str(value).split())


class SheetText:
    """Writes sheets as a heading line and tab-separated rows, within both budgets."""

    def __init__(self, text: TextBudget, max_cells: int) -> None:
        self.text = text
        self.max_cells = max_cells
        self.cells = 0
        self.stopped = False

    def cells_left(self) -> int:
        return max(self.max_cells - self.cells, 0)

    def sheet(self, name: str) -> None:
        self.text.separate("\n\n")
        self.text.add(f"# Sheet: {name}")

    def row(self, cells: list[tuple[int, Any]]) -> bool:
        """Add one row of (1-based column, value); False when a budget stops the reading."""
        if self.stopped:
            return False
        room = self.cells_left()
        if len(cells) >= room:
            cells = cells[:room]
            self.stopped = True
        self.cells += len(cells)
        pieces: list[str] = []
        last = 0
        for column, value in cells:
            gap = column - last - 1
            if pieces or gap > 0:
                pieces.append("\t" * (min(gap, _MAX_GAP) + 1) if pieces else "\t" * min(gap, _MAX_GAP))
            pieces.append(_cell_string(value))
            last = column
        line = "".join(pieces).rstrip()
        if line.strip():
            self.text.separate("\n")
            if not self.text.add(line):
                return False
        return not self.stopped

    def finish(self) -> None:
        if self.stopped:
            self.text.note(f"Stopped after {self.max_cells:,} cells")


def read_xlsx(data: bytes, budget: ParseBudget) -> ParsedDocument:
    from openpyxl import load_workbook
    from openpyxl.worksheet._reader import WorkSheetParser

    try:
        workbook = load_workbook(io.BytesIO(as_transitional(data)), read_only=True, data_only=True, keep_links=False)
    except Exception as exc:
        log.info("openpyxl could not open the workbook: %s", exc)
        raise ParseError("This Excel workbook could not be read: the file is damaged or incomplete.") from None
    text = TextBudget(budget.max_chars)
    sheets = SheetText(text, budget.sheet_max_cells)
    try:
        for sheet in workbook.worksheets:
            sheets.sheet(sheet.title)
            # The private row parser is what ReadOnlyWorksheet itself uses, minus the padding.
            with sheet._get_source() as source:
                parser = WorkSheetParser(
                    source,
                    sheet._shared_strings,
                    data_only=True,
                    epoch=workbook.epoch,
                    date_formats=workbook._date_formats,
                    timedelta_formats=workbook._timedelta_formats,
                )
                going = True
                for _index, cells in parser.parse():
                    if not cells:
                        continue
                    going = sheets.row([(cell["column"], cell["value"]) for cell in cells])
                    if not going:
                        break
            if not going:
                break
    finally:
        workbook.close()
    sheets.finish()
    return text.finish()


def read_xls(data: bytes, budget: ParseBudget) -> ParsedDocument:
    import xlrd

    try:
        workbook = xlrd.open_workbook(
            file_contents=data, on_demand=True, ragged_rows=True, formatting_info=False, logfile=io.StringIO()
        )
    except Exception as exc:
        if isinstance(exc, xlrd.XLRDError) and "encrypted" in str(exc).lower():
            raise EncryptedDocumentError(
                "This Excel workbook is password-protected. Remove the password and upload it again."
            ) from None
        log.info("xlrd could not open the workbook: %s", exc)
        raise ParseError("This Excel workbook could not be read: the file is damaged or incomplete.") from None
    text = TextBudget(budget.max_chars)
    sheets = SheetText(text, budget.sheet_max_cells)
    try:
        for index in range(workbook.nsheets):
            sheet = workbook.sheet_by_index(index)
            sheets.sheet(sheet.name)
            going = True
            for row_index in range(sheet.nrows):
                cells = [
                    (column + 1, _xls_value(cell, workbook.datemode))
                    for column, cell in enumerate(sheet.row(row_index))
                    if cell.ctype not in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK)
                ]
                if cells and not (going := sheets.row(cells)):
                    break
            workbook.unload_sheet(index)
            if not going:
                break
    finally:
        workbook.release_resources()
    sheets.finish()
    return text.finish()


def _xls_value(cell: Any, datemode: int) -> Any:
    import xlrd

    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            return xlrd.xldate_as_datetime(cell.value, datemode)
        except (ValueError, OverflowError, xlrd.xldate.XLDateError):
            return cell.value
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return bool(cell.value)
    if cell.ctype == xlrd.XL_CELL_ERROR:
        return xlrd.error_text_from_code.get(cell.value, "#ERROR")
    return cell.value
