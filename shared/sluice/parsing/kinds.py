"""The file kinds Sluice reads: extension, family and the canonical MIME type stored (SPEC §4, R-UP-6)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileKind:
    kind: str
    family: str
    mime: str
    extension: str
    # Set when the content is another supported kind than the name says (R-UP-6): the sentence the
    # document carries, e.g. "q3.xlsx is named as an Excel workbook (.xlsx) but is a legacy Excel …".
    note: str | None = None


@dataclass(frozen=True)
class KindSpec:
    kind: str
    family: str
    mime: str
    label: str  # how a sentence names this kind: "a PDF", "a Word document"


_SPECS = [
    KindSpec("pdf", "pdf", "application/pdf", "a PDF"),
    KindSpec(
        "docx",
        "docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "a Word document (.docx)",
    ),
    KindSpec("docm", "docx", "application/vnd.ms-word.document.macroEnabled.12", "a macro-enabled Word document"),
    KindSpec("doc", "doc", "application/msword", "a legacy Word document (.doc)"),
    KindSpec(
        "xlsx",
        "spreadsheet",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "an Excel workbook (.xlsx)",
    ),
    KindSpec("xlsm", "spreadsheet", "application/vnd.ms-excel.sheet.macroEnabled.12", "a macro-enabled Excel workbook"),
    KindSpec("xls", "spreadsheet", "application/vnd.ms-excel", "a legacy Excel workbook (.xls)"),
    KindSpec("ods", "spreadsheet", "application/vnd.oasis.opendocument.spreadsheet", "an OpenDocument spreadsheet"),
    KindSpec(
        "pptx",
        "presentation",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "a PowerPoint presentation (.pptx)",
    ),
    KindSpec(
        "pptm",
        "presentation",
        "application/vnd.ms-powerpoint.presentation.macroEnabled.12",
        "a macro-enabled PowerPoint presentation",
    ),
    KindSpec("odp", "presentation", "application/vnd.oasis.opendocument.presentation", "an OpenDocument presentation"),
    KindSpec("odt", "document", "application/vnd.oasis.opendocument.text", "an OpenDocument text document"),
    KindSpec("msg", "email", "application/vnd.ms-outlook", "an Outlook message"),
    KindSpec("txt", "text", "text/plain", "a text file"),
    KindSpec("md", "text", "text/markdown", "a Markdown file"),
    KindSpec("csv", "text", "text/csv", "a CSV file"),
    KindSpec("json", "text", "application/json", "a JSON file"),
    KindSpec("xml", "text", "application/xml", "an XML file"),
    KindSpec("html", "text", "text/html", "an HTML page"),
    KindSpec("zip", "archive", "application/zip", "a zip archive"),
    KindSpec("tar.gz", "archive", "application/gzip", "a gzip-compressed tar archive"),
    KindSpec("png", "image", "image/png", "a PNG image"),
    KindSpec("jpg", "image", "image/jpeg", "a JPEG image"),
    KindSpec("webp", "image", "image/webp", "a WebP image"),
    KindSpec("gif", "image", "image/gif", "a GIF image"),
    KindSpec("tif", "image", "image/tiff", "a TIFF image"),
]

SPECS: dict[str, KindSpec] = {spec.kind: spec for spec in _SPECS}

# Extension -> kind. .docm and .pptm are read like .docx/.pptx: Sluice reads text only and
# never runs a macro, and users of Office hand these in as often as the plain ones.
EXTENSION_KINDS: dict[str, str] = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".docm": "docm",
    ".doc": "doc",
    ".xlsx": "xlsx",
    ".xlsm": "xlsm",
    ".xls": "xls",
    ".ods": "ods",
    ".pptx": "pptx",
    ".pptm": "pptm",
    ".odp": "odp",
    ".odt": "odt",
    ".msg": "msg",
    ".txt": "txt",
    ".md": "md",
    ".markdown": "md",
    ".csv": "csv",
    ".json": "json",
    ".xml": "xml",
    ".xlf": "xml",  # XLIFF translation files are plain XML
    ".xliff": "xml",
    ".html": "html",
    ".htm": "html",
    ".zip": "zip",
    ".tar.gz": "tar.gz",
    ".tgz": "tar.gz",
    ".png": "png",
    ".jpg": "jpg",
    ".jpeg": "jpg",
    ".webp": "webp",
    ".gif": "gif",
    ".tif": "tif",
    ".tiff": "tif",
}

# What extract() can route, by extension (GET /rag/supported-formats answers this).
SUPPORTED_EXTENSIONS: dict[str, str] = {ext: SPECS[kind].family for ext, kind in EXTENSION_KINDS.items()}


def extension_of(filename: str) -> str:
    """The extension that decides the kind: the last suffix, or ``.tar.gz`` as one."""
    name = filename.replace("\\", "/").rsplit("/", 1)[-1].lower().strip()
    if name.endswith(".tar.gz"):
        return ".tar.gz"
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        return ""
    return "." + ext


def kind_for(kind: str, extension: str, note: str | None = None) -> FileKind:
    spec = SPECS[kind]
    return FileKind(kind=spec.kind, family=spec.family, mime=spec.mime, extension=extension, note=note)


def primary_extension(kind: str) -> str:
    """The extension a kind is first named by in EXTENSION_KINDS (".jpg" for jpg, ".tar.gz" for tar.gz)."""
    return next(ext for ext, named in EXTENSION_KINDS.items() if named == kind)


def supported_list() -> str:
    """The extensions in one sentence fragment, for refusals that must say what would work."""
    return ", ".join(sorted(SUPPORTED_EXTENSIONS))
