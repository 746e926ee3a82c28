"""Document routes: list, status counts, parsed text, download, delete, retry, supported formats."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query

from sluice import admission
from sluice.api.http import build_resolver, principal, respond
from sluice.api.responses import accepted
from sluice.api.views import (
    CollectionInfoOut,
    DeletedOut,
    DocumentContentOut,
    DocumentOut,
    DocumentsOut,
    DownloadOut,
    KnowledgeBaseIngestionOut,
    SupportedFormatsOut,
    collection_info_view,
    document_view,
    documents_view,
    kb_ingestion_view,
)
from sluice.api.views_pools import PoolDocumentsOut, RecipientRemovedOut, pool_view, recipient_removed_view
from sluice.config import current
from sluice.config.functions import DocumentsFunction
from sluice.db.connection import transaction
from sluice.ingest import documents
from sluice.ingest.families import chat_only_extensions, kb_extensions, ocr_extensions
from sluice.observability import http_handler
from sluice.parsing import SUPPORTED_EXTENSIONS
from sluice.wiring import job_queue, object_store, parameter_reader

app = build_resolver()


@app.get("/rag/supported-formats", summary="The file types Sluice reads")
def supported_formats() -> SupportedFormatsOut:
    principal(app)
    return SupportedFormatsOut(extensions=dict(sorted(SUPPORTED_EXTENSIONS.items())),
                               knowledge_base=kb_extensions(), chat_only=chat_only_extensions(),
                               knowledge_base_with_ocr=ocr_extensions())


@app.get("/kb/<kb_id>/documents", summary="A base's documents, newest first")
def list_documents(kb_id: str, limit: Annotated[int, Query(ge=1, le=200)] = 50,
                   offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
                   status: Annotated[Literal["processing", "done", "error"] | None,
                                     Query(description="Only documents with this status; total counts them.")] = None,
                   ) -> DocumentsOut:
    p = principal(app)
    with transaction() as conn:
        page = documents.list_documents(conn, p, kb_id, limit=limit, offset=offset, status=status)
    return documents_view(page)


@app.get("/kb/<kb_id>/ingestion", summary="A base's indexing status and counts (R-DOC-3)")
def kb_ingestion(kb_id: str) -> KnowledgeBaseIngestionOut:
    p = principal(app)
    with transaction() as conn:
        kb, counts = documents.kb_ingestion(conn, p, kb_id)
    return kb_ingestion_view(kb, counts)


@app.get("/rag/collections/<name>/info", summary="A collection's indexing status and counts (R-DOC-3)")
def collection_info(name: str) -> CollectionInfoOut:
    p = principal(app)
    with transaction() as conn:
        bases, counts = documents.collection_info(conn, p, name)
    return collection_info_view(name, bases, counts)


@app.get("/rag/documents/<doc_id>/content", summary="The text the parse stage read")
def document_content(doc_id: str) -> DocumentContentOut:
    p = principal(app)
    with transaction() as conn:
        doc = documents.get_document(conn, p, doc_id)
    return DocumentContentOut(id=str(doc.id), filename=doc.filename,
                              content=documents.parsed_text(object_store(), doc))


@app.get("/rag/documents/<doc_id>/file", summary="A short-lived download link for the stored original")
def document_file(doc_id: str) -> DownloadOut:
    p = principal(app)
    with transaction() as conn:
        doc = documents.get_document(conn, p, doc_id)
    expires_in = current(DocumentsFunction).download_url_expires_seconds
    return DownloadOut(url=documents.download_url(object_store(), doc, expires_in=expires_in),
                       expires_in=expires_in, filename=doc.filename)


@app.delete("/rag/documents/<doc_id>", summary="Delete a document, its chunks and its stored objects (a shared "
                                               "document: the caller's access; the last recipient's takes it all)")
def delete_document(doc_id: str) -> DeletedOut:
    p = principal(app)
    with transaction() as conn:
        removal = documents.remove_document(conn, p, doc_id)
    if removal.gone:
        object_store().delete_many(documents.stored_objects(removal.document))
    return DeletedOut(id=str(removal.document.id), deleted=True)


# --- private pools (R-ACC-5, R-ACC-6) ---------------------------------------------------------

@app.get("/pools/documents", summary="The caller's private pool: their own documents and those shared with them")
def list_pool(limit: Annotated[int, Query(ge=1, le=200)] = 50,
              offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0) -> PoolDocumentsOut:
    p = principal(app)
    with transaction() as conn:
        page = documents.list_private_pool(conn, p, limit=limit, offset=offset)
        limits = admission.pool_limits(conn, p.user_id, current(DocumentsFunction))
    return pool_view(page, limits)


@app.delete("/pools/documents/<doc_id>", summary="The sharer deletes a shared document for every recipient")
def delete_shared(doc_id: str) -> DeletedOut:
    p = principal(app)
    with transaction() as conn:
        removal = documents.delete_shared(conn, p, doc_id)
    object_store().delete_many(documents.stored_objects(removal.document))
    return DeletedOut(id=str(removal.document.id), deleted=True)


@app.delete("/pools/documents/<doc_id>/recipients/<user_id>",
            summary="The sharer revokes one recipient (the last one revoked takes the document)")
def revoke_recipient(doc_id: str, user_id: str) -> RecipientRemovedOut:
    p = principal(app)
    with transaction() as conn:
        removal = documents.revoke_recipient(conn, p, doc_id, user_id)
    if removal.gone:
        object_store().delete_many(documents.stored_objects(removal.document))
    return recipient_removed_view(removal, user_id)


@app.post("/rag/documents/<doc_id>/retry", summary="Run a failed document's pipeline again (R-DOC-5)",
          responses=accepted(DocumentOut))
def retry_document(doc_id: str) -> Response[DocumentOut]:
    p = principal(app)
    with transaction() as conn:
        doc = documents.retry_document(conn, p, object_store(), doc_id, current(DocumentsFunction),
                                       read_parameter=parameter_reader())
    documents.send_retry(job_queue(), doc)
    return respond(202, document_view(doc))


handler = http_handler(app, settings=DocumentsFunction)
