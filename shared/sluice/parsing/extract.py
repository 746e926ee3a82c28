"""Routing a sniffed file to its reader, in this process (see isolation.py for the guarded way)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sluice.errors import DocumentRefused, EncryptedDocumentError, ParseError
from sluice.parsing.budget import ParseBudget, TextBudget, memory_sentence
from sluice.parsing.document import ParsedDocument
from sluice.parsing.images import ImageOptions
from sluice.parsing.kinds import SPECS, FileKind
from sluice.parsing.ocr import OcrPass
from sluice.parsing.ocr_engine import OcrEngine
from sluice.parsing.options import ParserOptions

log = logging.getLogger(__name__)

Reader = Callable[[bytes, ParseBudget], ParsedDocument]

_OOXML = {"docx", "docm", "xlsx", "xlsm", "pptx", "pptm"}
_ODF = {"odt", "ods", "odp"}


def _reader(kind: str) -> Reader:
    # Imported on demand: the isolated child pays only for the library its file needs.
    if kind == "pdf":
        from sluice.parsing.pdf import read_pdf

        return read_pdf
    if kind in ("docx", "docm"):
        from sluice.parsing.word import read_docx

        return read_docx
    if kind == "doc":
        from sluice.parsing.legacy_word import read_doc

        return read_doc
    if kind in ("xlsx", "xlsm"):
        from sluice.parsing.spreadsheet import read_xlsx

        return read_xlsx
    if kind == "xls":
        from sluice.parsing.spreadsheet import read_xls

        return read_xls
    if kind in ("pptx", "pptm"):
        from sluice.parsing.presentation import read_pptx

        return read_pptx
    if kind in _ODF:
        from sluice.parsing.opendocument import read_odf

        return read_odf
    if kind == "msg":
        from sluice.parsing.outlook import read_msg

        return read_msg
    if kind in ("txt", "md", "csv"):
        from sluice.parsing.text import read_plain

        return read_plain
    if kind == "json":
        from sluice.parsing.text import read_json

        return read_json
    if kind == "xml":
        from sluice.parsing.text import read_xml

        return read_xml
    if kind == "html":
        from sluice.parsing.text import read_html

        return read_html
    if kind in ("zip", "tar.gz"):
        return _read_archive_listing(kind)
    if SPECS[kind].family == "image":
        return lambda _data, _budget: ParsedDocument(text="")
    raise ValueError(f"no reader for kind {kind!r}")


def _pdf(images: ImageOptions | None, layout: bool) -> Reader:
    from sluice.parsing.pdf import read_pdf

    return lambda data, budget: read_pdf(data, budget, images, layout=layout)


def _read_archive_listing(kind: str) -> Reader:
    def read(data: bytes, budget: ParseBudget) -> ParsedDocument:
        from sluice.parsing.archives import check_archive
        from sluice.parsing.kinds import kind_for

        members = check_archive(data, kind_for(kind, ""), budget)
        text = TextBudget(budget.max_chars)
        # R-ARC-2: an archive's text is the list of what it holds.
        for member in members:
            line = member.path if member.skipped_reason is None else f"{member.path} (skipped: {member.skipped_reason})"
            text.separate("\n")
            if not text.add(line):
                break
        return text.finish(members=members)

    return read


def _with_parser(kind: FileKind, images: ImageOptions | None, parser: ParserOptions,
                 engine: OcrEngine | None) -> Reader | None:
    """The reader a collection's parser settings call for (R-PARSE-7); None: the kind's usual one."""
    ocr = (OcrPass(engine, parser.ocr_languages, parser.max_pages, parser.dpi, limit_note=parser.ocr_limit_note)
           if parser.ocr_on and engine else None)
    if kind.kind == "pdf":
        from sluice.parsing.pdf import read_pdf

        layout = parser.name == "layout"
        return lambda data, budget: read_pdf(data, budget, images, ocr=ocr, ocr_mode=parser.ocr,
                                             layout=layout)
    if SPECS[kind.kind].family == "image" and ocr is not None:
        from sluice.parsing.scans import read_scanned_image

        return lambda data, budget: read_scanned_image(data, kind.kind, budget, ocr)
    return None


def extract(data: bytes, kind: FileKind, budget: ParseBudget, images: ImageOptions | None = None,
            parser: ParserOptions | None = None, engine: OcrEngine | None = None) -> ParsedDocument:
    """Read ``data`` as ``kind`` within ``budget``; refusals are DocumentRefused subclasses.

    ``images`` (image description on, R-PARSE-6) has a PDF's images collected too; other kinds
    ignore it: their pictures are not described (see sluice.parsing.images). ``parser`` (a
    knowledge base's ``ingestion_config.parser``) with ``engine`` reads scanned pages and images by OCR.
    """
    reader = _with_parser(kind, images, parser, engine) if parser is not None else None
    if reader is None:
        reader = _reader(kind.kind) if kind.kind != "pdf" else _pdf(images, False)

    label = SPECS[kind.kind].label
    if kind.kind in _OOXML or kind.kind in _ODF:
        _check_office_container(data, kind, budget, label)
    try:
        return reader(data, budget)
    except DocumentRefused:
        raise
    except MemoryError:
        raise ParseError(memory_sentence(budget.memory_mb)) from None
    except RecursionError:
        raise ParseError("This document nests its content too deeply to be read.") from None
    except Exception as exc:
        # A library's message is for the log, never for the user-facing row (R-DOC-4).
        log.warning("reader for %s failed: %s: %s", kind.kind, type(exc).__name__, exc)
        raise ParseError(
            f"This file could not be read as {label}: it is damaged or uses features Sluice cannot read."
        ) from None


def _check_office_container(data: bytes, kind: FileKind, budget: ParseBudget, label: str) -> None:
    from sluice.parsing.containers import check_container, zip_container_is_encrypted_odf
    from sluice.parsing.sniff import OLE2_MAGIC

    if data.startswith(OLE2_MAGIC):
        # sniff() let this through only because it holds an EncryptedPackage.
        raise EncryptedDocumentError(
            f"This file is {label} protected with a password. Remove the password and upload it again."
        )
    sentence_label = "This " + label.split(" ", 1)[1]
    check_container(data, budget, sentence_label, odf=kind.kind in _ODF)
    if kind.kind in _ODF and zip_container_is_encrypted_odf(data):
        raise EncryptedDocumentError(
            f"This file is {label} protected with a password. Remove the password and upload it again."
        )
