"""Files built in the tests: small documents of each kind and hostile archives.

Nothing here is copied from the real corpus; everything is generated so the
tests say exactly which property of the file they are about.
"""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import time
import zipfile
from pathlib import Path

from sluice.parsing import ParseBudget

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / ".." / "shared" / "corpus" / "real"

MIB = 1 << 20


def budget(**overrides: int) -> ParseBudget:
    values = dict(
        max_chars=5_000_000,
        pdf_max_pages=2000,
        sheet_max_cells=1_000_000,
        archive_max_entries=5000,
        archive_max_bytes=200 * MIB,
        archive_max_ratio=100,
        archive_max_member_bytes=50 * MIB,
        timeout_seconds=30,
        memory_mb=1536,
    )
    values.update(overrides)
    return ParseBudget(**values)


# --- archives ------------------------------------------------------------------------------


def zip_bytes(members: list[tuple[str | zipfile.ZipInfo, bytes]], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, content in members:
            archive.writestr(name, content)
    return buffer.getvalue()


def unix_zip_info(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.create_system = 3
    info.external_attr = mode << 16
    return info


def with_flag(data: bytes, name: str, flag: int) -> bytes:
    """Set a general-purpose flag bit on ``name`` in both its local and central headers."""
    out = bytearray(data)
    encoded = name.encode()
    for signature, flag_at, name_len_at, name_at in ((b"PK\x03\x04", 6, 26, 30), (b"PK\x01\x02", 8, 28, 46)):
        at = out.find(signature)
        while at >= 0:
            (name_len,) = struct.unpack_from("<H", out, at + name_len_at)
            if bytes(out[at + name_at : at + name_at + name_len]) == encoded:
                (flags,) = struct.unpack_from("<H", out, at + flag_at)
                struct.pack_into("<H", out, at + flag_at, flags | flag)
            at = out.find(signature, at + 4)
    return bytes(out)


def with_declared_size(data: bytes, name: str, size: int) -> bytes:
    """Rewrite the uncompressed size ``name``'s headers declare (the data stays as it is)."""
    out = bytearray(data)
    encoded = name.encode()
    for signature, size_at, name_len_at, name_at in ((b"PK\x03\x04", 22, 26, 30), (b"PK\x01\x02", 24, 28, 46)):
        at = out.find(signature)
        while at >= 0:
            (name_len,) = struct.unpack_from("<H", out, at + name_len_at)
            if bytes(out[at + name_at : at + name_at + name_len]) == encoded:
                struct.pack_into("<L", out, at + size_at, size)
            at = out.find(signature, at + 4)
    return bytes(out)


def tar_gz_bytes(members: list[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
            else:
                name, content = member
                info = tarfile.TarInfo(name)
                info.size = len(content)
                info.mtime = int(time.time())
                tar.addfile(info, io.BytesIO(content))
    return gzip.compress(raw.getvalue())


def tar_entry(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


# --- documents -----------------------------------------------------------------------------


def pdf_bytes(pages: list[str]) -> bytes:
    import pymupdf

    document = pymupdf.open()
    for text in pages:
        page = document.new_page()
        if text:
            page.insert_textbox(pymupdf.Rect(36, 36, 576, 806), text, fontsize=6)
    return document.tobytes()


def image_only_pdf(pages: int = 2) -> bytes:
    import pymupdf

    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
    pixmap.clear_with(200)
    png = pixmap.tobytes("png")
    document = pymupdf.open()
    for _ in range(pages):
        page = document.new_page()
        page.insert_image(pymupdf.Rect(50, 50, 250, 250), stream=png)
    return document.tobytes()


def png_bytes() -> bytes:
    import pymupdf

    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 4, 4), False)
    return pixmap.tobytes("png")


def docx_bytes(
    paragraphs: list[str], table: list[list[str]] | None = None, extra_parts: dict[str, bytes] | None = None
) -> bytes:
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    buffer = io.BytesIO()
    document.save(buffer)
    data = buffer.getvalue()
    if extra_parts:
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
            for item in source.infolist():
                target.writestr(item, source.read(item))
            for name, content in extra_parts.items():
                target.writestr(name, content)
        data = out.getvalue()
    return data


def xlsx_bytes(sheets: dict[str, list[list[object]]]) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def replace_zip_member(data: bytes, name: str, content: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item, content if item.filename == name else source.read(item))
    return out.getvalue()


def pptx_bytes() -> bytes:
    import pptx
    from pptx.util import Inches

    presentation = pptx.Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[5])
    first.shapes.title.text = "Quarterly results"
    group = first.shapes.add_group_shape()
    box = group.shapes.add_textbox(Inches(1), Inches(2), Inches(3), Inches(1))
    box.text_frame.text = "Grouped caption"
    first.notes_slide.notes_text_frame.text = "Say the numbers slowly"
    second = presentation.slides.add_slide(presentation.slide_layouts[5])
    second.shapes.title.text = "Table slide"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    table.cell(0, 0).text = "Region"
    table.cell(0, 1).text = "Revenue"
    table.cell(1, 0).text = "North"
    table.cell(1, 1).text = "42"
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def odt_bytes(paragraphs: list[str]) -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.text import P

    document = OpenDocumentText()
    for text in paragraphs:
        document.text.addElement(P(text=text))
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def ods_bytes(rows: list[list[str]], repeated_empty_columns: int = 0, repeated_empty_rows: int = 0) -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    table = Table(name="Data")
    for values in rows:
        row = TableRow()
        for value in values:
            cell = TableCell(valuetype="string")
            cell.addElement(P(text=value))
            row.addElement(cell)
        if repeated_empty_columns:
            row.addElement(TableCell(numbercolumnsrepeated=repeated_empty_columns))
        table.addElement(row)
    if repeated_empty_rows:
        table.addElement(TableRow(numberrowsrepeated=repeated_empty_rows))
    document.spreadsheet.addElement(table)
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def odp_bytes(slides: list[str]) -> bytes:
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    document = OpenDocumentPresentation()
    layout = PageLayout(name="Layout")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="Master", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    for text in slides:
        page = Page(masterpagename=master)
        frame = Frame(width="10cm", height="2cm", x="1cm", y="1cm")
        box = TextBox()
        box.addElement(P(text=text))
        frame.addElement(box)
        page.addElement(frame)
        document.presentation.addElement(page)
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()
