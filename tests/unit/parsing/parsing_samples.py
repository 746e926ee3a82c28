"""Files built in the tests: small documents of each kind and hostile archives.

Nothing here is copied from the real corpus; everything is generated so the
tests say exactly which property of the file they are about.
"""

from __future__ import annotations

import gzip
import io
import re
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
    return gzip.compress(raw.getvalue(), mtime=0)  # the same bytes every run (test ids)


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


# The two images of ``pdf_with_images``, told apart by size (a fake vision server reads it from the header).
CHART_SIZE = (300, 200)
DIAGRAM_SIZE = (200, 300)


def solid_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    import pymupdf

    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, width, height), False)
    pixmap.set_rect(pixmap.irect, rgb)
    return pixmap.tobytes("png")


def pdf_with_images(*, icon: bool = False) -> bytes:
    """Four pages showing two distinct images (R-PARSE-6): the chart twice on page 1, the diagram on
    pages 2 and 3, and on page 4 a byte-identical copy of the chart under another xref. Each page has
    text above and below its image; ``icon`` adds a 12x12 bullet (under any minimum size) to page 4."""
    import pymupdf

    document = pymupdf.open()
    page = document.new_page()
    page.insert_text((72, 72), "Quarterly report, page one: the revenue overview.")
    chart = page.insert_image(pymupdf.Rect(72, 100, 372, 300), stream=solid_png(*CHART_SIZE, (200, 30, 30)))
    page.insert_image(pymupdf.Rect(72, 420, 222, 520), xref=chart)
    page.insert_text((72, 600), "Page one closes with the outlook for next year.")
    page = document.new_page()
    page.insert_text((72, 72), "Page two explains the cooling loop.")
    diagram = page.insert_image(pymupdf.Rect(72, 100, 272, 400), stream=solid_png(*DIAGRAM_SIZE, (30, 30, 200)))
    page.insert_text((72, 500), "Page two ends with maintenance intervals.")
    page = document.new_page()
    page.insert_text((72, 72), "Page three repeats the loop for the night shift.")
    page.insert_image(pymupdf.Rect(72, 100, 272, 400), xref=diagram)
    page.insert_text((72, 500), "Page three ends here.")
    page = document.new_page()
    page.insert_text((72, 72), "Page four is the appendix with the same chart.")
    copy = document.get_new_xref()
    document.update_object(copy, document.xref_object(chart))
    document.update_stream(copy, document.xref_stream_raw(chart), new=True, compress=False)
    page.insert_image(pymupdf.Rect(72, 100, 372, 300), xref=copy)
    if icon:
        page.insert_image(pymupdf.Rect(72, 320, 84, 332), stream=solid_png(12, 12, (0, 0, 0)))
    page.insert_text((72, 400), "Page four ends the appendix.")
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


_TRANSITIONAL_URI = re.compile(
    rb"http://schemas\.openxmlformats\.org/(officeDocument|spreadsheetml|wordprocessingml|presentationml|drawingml)"
    rb"/2006/([A-Za-z/-]+)")


def strict_ooxml(data: bytes) -> bytes:
    """The package saved as ISO Strict: every Transitional namespace and relationship type under its
    Strict name (the packaging namespaces stay, as in files Office writes)."""
    def strict(match: re.Match[bytes]) -> bytes:
        name = match.group(2).replace(b"extended-properties", b"extendedProperties").replace(
            b"custom-properties", b"customProperties")
        return b"http://purl.oclc.org/ooxml/" + match.group(1) + b"/" + name

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename.endswith((".xml", ".rels")):
                content = _TRANSITIONAL_URI.sub(strict, content)
            target.writestr(item, content)
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


# --- OLE2 (compound file) documents: .xls and .msg -------------------------------------------

_FREE, _END, _FATSECT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
_SECTOR, _MINI, _CUTOFF = 512, 64, 4096


def cfb_bytes(streams: dict[str, bytes]) -> bytes:
    """A version-3 compound file holding ``streams`` in its root storage.

    Enough of [MS-CFB] for readers to find each stream: small ones in the mini
    stream, the rest in sectors, one FAT sector at most (files up to ~64 KB).
    """
    names = sorted(streams, key=lambda n: (len(n), n.upper()))  # the directory's own order
    mini = b""
    mini_fat: list[int] = []
    placed: dict[str, tuple[int, bool]] = {}
    for name in names:
        data = streams[name]
        if len(data) < _CUTOFF:
            start = len(mini) // _MINI
            count = max(1, -(-len(data) // _MINI))
            mini_fat += [start + i + 1 for i in range(count - 1)] + [_END]
            mini += data.ljust(count * _MINI, b"\0")
            placed[name] = (start, True)
    sectors: list[bytes] = []
    fat: list[int] = []

    def add(data: bytes, marker: int | None = None) -> int:
        start = len(sectors)
        count = max(1, -(-len(data) // _SECTOR))
        for i in range(count):
            sectors.append(data[i * _SECTOR:(i + 1) * _SECTOR].ljust(_SECTOR, b"\0"))
            fat.append(marker if marker is not None else (start + i + 1 if i < count - 1 else _END))
        return start

    mini_start = add(mini) if mini else _END
    for name in names:
        if name not in placed:
            placed[name] = (add(streams[name]), False)
    mini_fat_start = add(b"".join(struct.pack("<I", v) for v in mini_fat)) if mini_fat else _END

    def entry(name: str, kind: int, right: int, child: int, start: int, size: int) -> bytes:
        encoded = name.encode("utf-16-le") + b"\0\0"
        return (encoded.ljust(64, b"\0") + struct.pack("<HBB", len(encoded), kind, 1)
                + struct.pack("<III", _FREE, right, child) + b"\0" * 16 + b"\0" * 4 + b"\0" * 16
                + struct.pack("<IQ", start, size))

    # Root first; its children as one chain of right siblings (all black: a valid, if tall, tree).
    directory = entry("Root Entry", 5, _FREE, 1 if names else _FREE, mini_start, len(mini))
    for i, name in enumerate(names):
        start, _ = placed[name]
        directory += entry(name, 2, i + 2 if i + 1 < len(names) else _FREE, _FREE, start, len(streams[name]))
    unused = b"\0" * 66 + b"\0\0" + struct.pack("<III", _FREE, _FREE, _FREE) + b"\0" * 48
    while len(directory) % _SECTOR:
        directory += unused
    dir_start = add(directory)
    fat_sector = len(sectors)
    fat.append(_FATSECT)
    assert len(fat) <= _SECTOR // 4, "cfb_bytes writes one FAT sector: keep samples small"
    sectors.append(b"".join(struct.pack("<I", v) for v in fat).ljust(_SECTOR, b"\xff"))
    header = (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 16 + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6)
              + b"\0" * 6 + struct.pack("<IIIIIIIII", 0, 1, dir_start, 0, _CUTOFF, mini_fat_start,
                                        1 if mini_fat else 0, _END, 0)
              + struct.pack("<I", fat_sector) + b"\xff" * (109 * 4 - 4))
    return header + b"".join(sectors)


def _biff(record: int, payload: bytes) -> bytes:
    return struct.pack("<HH", record, len(payload)) + payload


def _biff_string(text: str, length_bytes: int = 2) -> bytes:
    # BIFF8 unicode string: character count, option flags (1: UTF-16), the characters.
    return struct.pack("<H" if length_bytes == 2 else "<B", len(text)) + b"\x01" + text.encode("utf-16-le")


def xls_bytes(sheets: dict[str, list[list[str | float]]]) -> bytes:
    """A BIFF8 workbook (Excel 97-2003) in its OLE2 container: text and number cells."""
    bof = lambda kind: _biff(0x0809, struct.pack("<HHHHII", 0x0600, kind, 0x0DBB, 0x07CC, 0, 0x0006))  # noqa: E731
    eof = _biff(0x000A, b"")
    bodies = []
    for rows in sheets.values():
        cells = b""
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                if isinstance(value, str):
                    cells += _biff(0x0204, struct.pack("<HHH", r, c, 0) + _biff_string(value))  # LABEL
                else:
                    cells += _biff(0x0203, struct.pack("<HHHd", r, c, 0, float(value)))  # NUMBER
        width = max((len(r) for r in rows), default=0)
        dims = _biff(0x0200, struct.pack("<IIHHH", 0, len(rows), 0, width, 0))
        bodies.append(bof(0x0010) + dims + cells + eof)
    sheet_records = [_biff(0x0085, struct.pack("<IBB", 0, 0, 0) + _biff_string(name, 1)) for name in sheets]
    globals_size = len(bof(0x0005)) + sum(len(r) for r in sheet_records) + len(eof)
    offset = globals_size
    patched = []
    for record, body in zip(sheet_records, bodies, strict=True):
        patched.append(record[:4] + struct.pack("<I", offset) + record[8:])
        offset += len(body)
    stream = bof(0x0005) + b"".join(patched) + eof + b"".join(bodies)
    return cfb_bytes({"Workbook": stream.ljust(_CUTOFF, b"\0")})


def msg_bytes(subject: str, body: str, sender: str, to: str) -> bytes:
    """An Outlook message: the MAPI property streams of its subject, body, sender and recipients."""
    def prop(tag: str, text: str) -> tuple[str, bytes]:
        return f"__substg1.0_{tag}001F", text.encode("utf-16-le")

    return cfb_bytes(dict([
        prop("0037", subject), prop("1000", body), prop("0C1A", sender), prop("0E04", to),
        ("__properties_version1.0", b"\0" * 32),
    ]))


_MACRO_ENABLED = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml":
        "application/vnd.ms-word.document.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml":
        "application/vnd.ms-excel.sheet.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml":
        "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml",
}


def macro_enabled(data: bytes) -> bytes:
    """An OOXML file as its macro-enabled sibling (.docm, .xlsm, .pptm) declares itself."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        types = archive.read("[Content_Types].xml").decode()
    for plain, macro in _MACRO_ENABLED.items():
        types = types.replace(plain, macro)
    return replace_zip_member(data, "[Content_Types].xml", types.encode())


TEXT_SAMPLES = {
    ".csv": b"region,revenue\nNorth,42\nSouth,17\n",
    ".json": b'{"policy": "The on-call engineer rotates the signing keys every ninety days."}',
    ".xml": b'<?xml version="1.0" encoding="UTF-8"?><policy><rule>Rotate the signing keys every ninety days.</rule>'
            b"</policy>",
    ".xlf": b'<?xml version="1.0"?><xliff version="1.2"><file source-language="en"><body><trans-unit id="1">'
            b"<source>Rotate the keys</source></trans-unit></body></file></xliff>",
    ".html": b"<html><head><title>Policy</title><script>x()</script></head><body><p>Rotate the signing keys "
             b"every ninety days.</p></body></html>",
}


SOFFICE_ABSENT = (
    "LibreOffice (soffice) is not installed: a .doc sample is made from a .docx by LibreOffice, and Sluice reads "
    ".doc through it (`make install` installs it on Debian-like machines as root; docs/guides/parsers-and-ocr.md)"
)


def doc_bytes(documents: list[list[str]], timeout: float = 180) -> list[bytes]:
    """Legacy Word (.doc) files, one per list of paragraphs: generated .docx files converted by
    ``soffice --headless --convert-to doc`` in one run (its start is most of the cost).

    Raises ``LookupError`` (with ``SOFFICE_ABSENT``) where LibreOffice is not installed.
    """
    import shutil
    import subprocess
    import tempfile

    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        raise LookupError(SOFFICE_ABSENT)
    with tempfile.TemporaryDirectory(prefix="sluice-doc-sample-") as work:
        folder = Path(work)
        sources = []
        for i, paragraphs in enumerate(documents):
            sources.append(folder / f"sample{i}.docx")
            sources[-1].write_bytes(docx_bytes(paragraphs))
        subprocess.run(
            [soffice, f"-env:UserInstallation={(folder / 'profile').as_uri()}", "--headless", "--norestore",
             "--convert-to", "doc", "--outdir", str(folder / "out"), *map(str, sources)],
            check=True, timeout=timeout, stdin=subprocess.DEVNULL, capture_output=True,
        )
        return [(folder / "out" / f"sample{i}.doc").read_bytes() for i in range(len(documents))]


def sample_for(extension: str) -> bytes:
    """A small, generated file of each extension a knowledge base reads (for .doc, see ``doc_bytes``)."""
    text = "The on-call engineer rotates the signing keys every ninety days."
    generated = {
        ".pdf": lambda: pdf_bytes([text, "A second page about the audit ledger."]),
        ".docx": lambda: docx_bytes([text]),
        ".docm": lambda: macro_enabled(docx_bytes([text])),
        ".xlsx": lambda: xlsx_bytes({"Keys": [["key", "days"], ["signing", 90]]}),
        ".xlsm": lambda: macro_enabled(xlsx_bytes({"Keys": [["key", "days"], ["signing", 90]]})),
        ".xls": lambda: xls_bytes({"Keys": [["key", "days"], ["signing", 90.0]]}),
        ".ods": lambda: ods_bytes([["key", "days"], ["signing", "90"]]),
        ".pptx": pptx_bytes,
        ".pptm": lambda: macro_enabled(pptx_bytes()),
        ".odp": lambda: odp_bytes([text]),
        ".odt": lambda: odt_bytes([text]),
        ".msg": lambda: msg_bytes("Key rotation", text, "Ann Example", "Ben Example"),
        ".txt": lambda: text.encode(),
        ".md": lambda: f"# Keys\n\n{text}".encode(),
        ".markdown": lambda: f"# Keys\n\n{text}".encode(),
        ".htm": lambda: TEXT_SAMPLES[".html"],
        ".xliff": lambda: TEXT_SAMPLES[".xlf"],
        ".zip": lambda: zip_bytes([("a.txt", text.encode())]),
        ".tar.gz": lambda: tar_gz_bytes([("a.txt", text.encode())]),
        ".tgz": lambda: tar_gz_bytes([("a.txt", text.encode())]),
        **{ext: (lambda data=data: data) for ext, data in TEXT_SAMPLES.items()},
    }
    return generated[extension]()


def pdf_with_ligatures(text: str) -> bytes:
    """One page whose text is shown in a font that has the ligature glyphs (ﬁ ﬂ ﬃ), as typeset PDFs
    carry them: PyMuPDF's built-in Droid Sans Fallback, subset so the file stays small."""
    import pymupdf

    document = pymupdf.open()
    page = document.new_page()
    page.insert_font(fontname="F1", fontbuffer=pymupdf.Font("cjk").buffer)
    page.insert_text((72, 72), text, fontname="F1")
    document.subset_fonts()
    return document.tobytes(garbage=3, deflate=True)


def pdf_with_blank_content(pages: int = 1) -> bytes:
    """Born-digital pages that paint nothing a reader could see: a content stream holding only a
    saved and restored graphics state, and a white rectangle (what some writers put on an empty page)."""
    import pymupdf

    document = pymupdf.open()
    for _ in range(pages):
        page = document.new_page()
        page.draw_rect(page.rect, color=None, fill=(1, 1, 1))
    return document.tobytes()


def pdf_with_vector_letters() -> bytes:
    """A page whose 'text' is drawn as black vector paths (outlined letters): no text layer, ink on the page."""
    import pymupdf

    document = pymupdf.open()
    page = document.new_page()
    shape = page.new_shape()
    for x in range(72, 400, 24):
        shape.draw_line((x, 100), (x + 12, 130))
        shape.draw_line((x + 12, 130), (x + 20, 100))
    shape.finish(color=(0, 0, 0), width=2)
    shape.commit()
    return document.tobytes()


def without_zip_member(data: bytes, name: str) -> bytes:
    """The package with one member left out (its relationships still naming it)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            if item.filename != name:
                target.writestr(item, source.read(item))
    return out.getvalue()


def docx_with_content_controls(rows: list[list[str]]) -> bytes:
    """A table whose rows and cells sit inside content controls (w:sdt), as Word's cover pages and form
    templates put them: one row wrapped whole, and in every other row each cell wrapped on its own."""
    import docx
    from docx.oxml.ns import qn
    from lxml import etree

    document = docx.Document()
    grid = document.add_table(rows=len(rows), cols=len(rows[0]))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            grid.cell(r, c).text = value

    def wrap(element: object) -> None:
        sdt = etree.Element(qn("w:sdt"))
        etree.SubElement(sdt, qn("w:sdtPr"))
        content = etree.SubElement(sdt, qn("w:sdtContent"))
        element.addprevious(sdt)  # type: ignore[attr-defined]
        content.append(element)

    table = grid._tbl
    for r, tr in enumerate(list(table.iterchildren(qn("w:tr")))):
        if r == 0:
            wrap(tr)
        else:
            for tc in list(tr.iterchildren(qn("w:tc"))):
                wrap(tc)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def pptx_with_chart() -> bytes:
    """A slide whose only content is a column chart with a title, two series and three categories."""
    import pptx
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[6])
    data = CategoryChartData()
    data.categories = ["Lisbon", "Porto", "Faro"]
    data.add_series("Boiler inspections", (12, 7, 3))
    data.add_series("Chimney sweeps", (4, 2, 1))
    chart = slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1), Inches(6), Inches(4),
                                   data).chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Inspections by city, 2026"
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def pdf_with_structure() -> bytes:
    """Two pages: headings in a bigger bold font over an 11 pt body, a bullet list, a ruled table,
    and a heading at the top of page 2 (the ``layout`` parser's sample)."""
    import pymupdf

    document = pymupdf.open()
    page = document.new_page()
    y = 72.0

    def line(text: str, size: float = 11, font: str = "helv") -> None:
        nonlocal y
        page.insert_text((72, y), text, fontsize=size, fontname=font)
        y += size * 1.6

    line("Installation Guide", 20, "hebo")
    for n in range(3):
        line(f"This paragraph explains how the product is installed, sentence {n} of the body.")
    line("Requirements", 15, "hebo")
    for item in ("Python 3.11 or newer", "PostgreSQL 16 with pgvector", "Two gigabytes of memory"):
        line(f"\u2022 {item}")
    line("Configuration", 15, "hebo")
    line("The settings below are read at start-up.")
    rows = [("Setting", "Default", "Meaning"), ("chunk_size", "2500", "characters"), ("overlap", "200", "shared")]
    top = y
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            rect = pymupdf.Rect(72 + c * 120, top + r * 20, 72 + (c + 1) * 120, top + (r + 1) * 20)
            page.draw_rect(rect, color=(0, 0, 0), width=0.8)
            page.insert_text((rect.x0 + 4, rect.y1 - 6), cell, fontsize=10)
    second = document.new_page()
    second.insert_text((72, 72), "Troubleshooting", fontsize=15, fontname="hebo")
    second.insert_text((72, 100), "If the service does not start, read its log first.", fontsize=11)
    return document.tobytes()


def pdf_with_filled_form() -> bytes:
    """A filled form as many form fillers leave it: each text field's value (/V) set after its
    appearance stream was drawn empty, so no page shows the value; and a stamp whose text lives in
    a form XObject (another page placed on this one)."""
    import pymupdf

    document = pymupdf.open()
    page = document.new_page()
    page.insert_text((72, 72), "Application form", fontsize=14)
    for n, name in enumerate(("applicant", "city")):
        widget = pymupdf.Widget()
        widget.field_name = name
        widget.field_type = pymupdf.PDF_WIDGET_TYPE_TEXT
        widget.rect = pymupdf.Rect(72, 100 + n * 30, 300, 120 + n * 30)
        widget.field_value = ""
        page.add_widget(widget)
    for widget, value in zip(page.widgets(), ("Ada Lovelace", "Marylebone"), strict=True):
        document.xref_set_key(widget.xref, "V", pymupdf.get_pdf_str(value))
    stamp = pymupdf.open()
    stamp.new_page().insert_text((72, 72), "Received by the registry", fontsize=12)
    page.show_pdf_page(pymupdf.Rect(72, 400, 372, 600), stamp, 0)
    return document.tobytes()


def odp_with_embedded_objects() -> bytes:
    """One slide holding two embedded objects, as LibreOffice writes them: a chart (``Object 1``:
    its title and its data table) and a text document (``Object 2``), each in its own folder with its
    own content.xml."""
    from odf.chart import Chart, PlotArea, Title
    from odf.draw import Frame, Object, Page
    from odf.opendocument import OpenDocumentChart, OpenDocumentPresentation, OpenDocumentText
    from odf.style import MasterPage, PageLayout
    from odf.table import Table, TableCell, TableHeaderRows, TableRow, TableRows
    from odf.text import P

    document = OpenDocumentPresentation()
    layout = PageLayout(name="Layout")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="Master", pagelayoutname=layout)
    document.masterstyles.addElement(master)

    chart_document = OpenDocumentChart()
    chart = Chart(attributes={"class": "chart:bar"})
    title = Title()
    title.addElement(P(text="Revenue by region"))
    chart.addElement(title)
    chart.addElement(PlotArea())
    table = Table(name="local-table")
    header, body = TableHeaderRows(), TableRows()
    for target, values in ((header, ("", "Revenue")), (body, ("North", "42")), (body, ("South", "17"))):
        row = TableRow()
        for value in values:
            cell = TableCell()
            if value:
                cell.addElement(P(text=value))
            row.addElement(cell)
        target.addElement(row)
    table.addElement(header)
    table.addElement(body)
    chart.addElement(table)
    chart_document.chart.addElement(chart)

    text_document = OpenDocumentText()
    text_document.text.addElement(P(text="Footnote kept in an embedded text frame"))

    page = Page(masterpagename=master)
    for n, embedded in enumerate((chart_document, text_document)):
        frame = Frame(width="10cm", height="6cm", x="1cm", y=f"{1 + 7 * n}cm")
        frame.addElement(Object(href=document.addObject(embedded)))
        page.addElement(frame)
    document.presentation.addElement(page)
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()
