"""The parse stage: the stored original read within the parse budget, in an isolated child,
into the parsed-text artifact (an archive is unpacked instead, ``archive``)."""

from __future__ import annotations

import hashlib
import json
import time
import uuid

from sluice.access.vision import ImageDescriptionChoice
from sluice.admission import count_ocr_pages, ocr_pages_left, ocr_tenant
from sluice.chunking import IngestionConfig, parser_options
from sluice.config import UploadSettings
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db.documents import Document
from sluice.errors import (
    ArchiveRefusedError,
    FileTooLargeError,
    ScannedPdfError,
    StoredFileMissingError,
    UnsupportedTypeError,
)
from sluice.ingest.archive import unpack_archive
from sluice.ingest.artifacts import write_images, write_parsed
from sluice.ingest.families import kb_kind
from sluice.ingest.runner import StageContext, run_stage
from sluice.llm.catalog import find_chat_model
from sluice.parsing import extract_isolated, sniff
from sluice.parsing.images import ImageOptions
from sluice.parsing.ocr import OCR_OFF_HINT, engine_for, plan_ocr
from sluice.parsing.ocr_engine import OcrEngine
from sluice.parsing.options import DEFAULT_OPTIONS, ParserOptions
from sluice.storage import ObjectStore, content_key, stage_key


def parse_document(ctx: StageContext, doc_id: uuid.UUID, attempt: int) -> None:
    run_stage(ctx, doc_id, attempt, "parsing", lambda doc: _parse(ctx, doc, attempt),
              discards_file=_leaves_no_file)


# What the parse stage refuses to hold (R-UP-2, R-ARC-1): a file over the ceiling, of a type no base
# reads, or an archive refused whole.
_NOT_KEPT = (FileTooLargeError, UnsupportedTypeError, ArchiveRefusedError)


def _leaves_no_file(doc: Document, exc: BaseException) -> bool:
    """Whether a final parse failure leaves the document without a stored original to retry from.

    The file is missing, or it is refused as what it is and deleted. A file that was only not read
    (damaged, encrypted, scanned with OCR off, too slow, a plan the collection no longer allows) is
    kept: a retry reads it again, after whatever stopped it changed. An inbox object is the caller's
    own and stays (R-UP-3: its removal removes the document).
    """
    return doc.source != "s3_drop" and isinstance(exc, (StoredFileMissingError, *_NOT_KEPT))


def too_large(settings: UploadSettings) -> FileTooLargeError:
    return FileTooLargeError(
        f"The file is larger than the {settings.max_upload_size_mb} MB limit for knowledge-base documents."
    )


def _parse(ctx: StageContext, doc: Document, attempt: int) -> None:
    if doc.storage_path is None:
        raise StoredFileMissingError("The document has no stored file to read; upload it again.")
    data, size = ctx.store.get_limited(doc.storage_path, ctx.settings.max_upload_bytes)
    if size > ctx.settings.max_upload_bytes:
        raise too_large(ctx.settings)
    parser = _parser_options(ctx, doc)
    tenant = ocr_tenant(doc.org_id, doc.uploaded_by, doc.kb_id)
    parser, ocr_notes = _within_ocr_limits(ctx, parser, tenant)
    kind = kb_kind(sniff(data, doc.filename), ocr=parser.ocr_on)
    kind_notes = ([kind.note] if kind.note else []) + ocr_notes
    with ctx.uow() as conn:
        if not doc_repo.update(conn, doc.id, expect_attempt=attempt, filetype=kind.mime, filesize=size,
                               content_hash=hashlib.sha256(data).hexdigest(), parse_notes=kind_notes or None):
            return
    if kind.family == "archive":
        unpack_archive(ctx, doc, attempt, data, kind)
        return
    images = _image_options(ctx, doc) if kind.kind == "pdf" else None
    until = _deadline(ctx)
    # The engine only when OCR is on: off, nothing about OCR is looked up or loaded.
    engine = _engine(ctx, until) if parser.ocr_on else None
    try:
        if images is None and parser == DEFAULT_OPTIONS:
            # The defaults (pymupdf, OCR off, no image description): the call it always was.
            parsed = extract_isolated(data, kind, ctx.budget, until=until)
        else:
            parsed = extract_isolated(data, kind, ctx.budget, images, parser, engine, until=until,
                                      recognised=StoredPages(ctx.store, stage_key("ocr", doc.id, attempt)))
    except ScannedPdfError as exc:
        if parser.ocr_on:
            raise
        # R-PARSE-7: in a collection the sentence says what would read it.
        raise ScannedPdfError(f"{exc.message}. {OCR_OFF_HINT}") from None
    with ctx.uow() as conn:
        doc_repo.update(conn, doc.id, expect_attempt=attempt, parse_notes=(kind_notes + parsed.notes) or None,
                        parser=parsed.parser, ocr_pages=parsed.ocr_pages)
        count_ocr_pages(conn, tenant, parsed.ocr_pages or 0)
    if parsed.images or parsed.images_over_cap or parsed.images_unreadable:
        # The describe step (sluice.ingest.describe) puts the descriptions in and writes the rest.
        write_images(ctx.store, doc.id, attempt, kind.mime, kind.kind, parsed)
        return
    if images is not None or doc.images_described is not None:
        # On with no image: none described, none missed; off on a retry: an earlier attempt's record goes.
        counted = 0 if images is not None else None
        with ctx.uow() as conn:
            doc_repo.update(conn, doc.id, expect_attempt=attempt, images_described=counted,
                            images_undescribed=counted, image_note=None)
    # The readable copy outlives the stage artifact, which a lifecycle rule expires.
    ctx.store.put(content_key(doc.id), parsed.text.encode(), content_type="text/plain; charset=utf-8")
    write_parsed(ctx.store, doc.id, attempt, kind.mime, kind.kind, parsed)


def _deadline(ctx: StageContext) -> float | None:
    """The whole parse's deadline on ``time.monotonic()`` (issue 37): the invocation's remaining time
    less PARSE_DEADLINE_MARGIN_SECONDS, shared by the first child, Textract and the second child, so a
    parse ends with a sentence before the function is killed (and redelivered to pay again)."""
    if ctx.time_left_ms is None:
        return None
    return time.monotonic() + ctx.time_left_ms() / 1000 - ctx.settings.parse_deadline_margin_seconds


def _engine(ctx: StageContext, until: float | None) -> OcrEngine:
    provider = ctx.settings.ocr_provider
    return engine_for(provider, until=until) if provider == "textract" else engine_for(provider)


class StoredPages:
    """The pages Textract recognised in one attempt, kept at ``stage/ocr/<doc>.<attempt>.json`` (the
    stage prefix's lifecycle expires it): a redelivered parse reads them instead of sending them again."""

    def __init__(self, store: ObjectStore, key: str) -> None:
        self.store = store
        self.key = key

    def load(self) -> dict[int, str]:
        if self.store.head(self.key) is None:
            return {}
        return {int(n): str(text) for n, text in json.loads(self.store.get(self.key)).items()}

    def keep(self, pages: dict[int, str]) -> None:
        self.store.put(self.key, json.dumps({str(n): t for n, t in pages.items()}).encode(),
                       content_type="application/json")


def _within_ocr_limits(ctx: StageContext, parser: ParserOptions, tenant: str) -> tuple[ParserOptions, list[str]]:
    """The collection's OCR within the operator's limits (issue 37): force allowed, the pages a document
    and what is left of the tenant's day (sluice.parsing.ocr ``plan_ocr``), and the notes that say so."""
    if not parser.ocr_on:
        return parser, []
    s = ctx.settings
    with ctx.uow() as conn:
        left = ocr_pages_left(conn, tenant, s)
    return plan_ocr(parser, force_allowed=s.ocr_force_allowed, max_pages_per_document=s.ocr_max_pages_per_document,
                    pages_left_today=left, pages_per_day=s.ocr_pages_per_tenant_per_day)


def _parser_options(ctx: StageContext, doc: Document) -> ParserOptions:
    """The collection's ``ingestion_config.parser`` with the upload's override (R-PARSE-7)."""
    if doc.kb_id is None:
        return DEFAULT_OPTIONS
    with ctx.uow() as conn:
        kb = kb_repo.get(conn, doc.kb_id)
    if kb is None:
        return DEFAULT_OPTIONS
    return parser_options(IngestionConfig.model_validate(kb.ingestion_config), doc.ingestion_override)


def _image_options(ctx: StageContext, doc: Document) -> ImageOptions | None:
    """What the reader collects of a PDF's images when the collection describes them (R-PARSE-6);
    None (off, the default) extracts none."""
    if doc.kb_id is None:
        return None
    with ctx.uow() as conn:
        kb = kb_repo.get(conn, doc.kb_id)
    choice = ImageDescriptionChoice.of(kb.ingestion_config) if kb is not None else None
    entry = find_chat_model(choice.provider, choice.model) if choice is not None else None
    if entry is None or not entry.vision:
        return None
    s = ctx.settings
    return ImageOptions(max_images=s.image_description_max_per_doc, min_pixels=s.image_description_min_pixels,
                        max_side=entry.max_image_side, max_bytes=entry.max_image_bytes)
