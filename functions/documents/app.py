"""Document routes: list, status counts, parsed text, download, delete, retry, supported formats."""

from __future__ import annotations

from sluice.api.http import build_resolver, json_response, principal, query_int
from sluice.api.views import document_view
from sluice.config import get_settings
from sluice.db.connection import transaction
from sluice.ingest import documents
from sluice.observability import http_handler
from sluice.parsing import SUPPORTED_EXTENSIONS
from sluice.wiring import job_queue, stage_context

app = build_resolver()


@app.get("/rag/supported-formats")
def supported_formats():
    principal(app)
    kb = sorted(ext for ext, family in SUPPORTED_EXTENSIONS.items() if family != "image")
    return json_response(200, {"extensions": dict(sorted(SUPPORTED_EXTENSIONS.items())), "knowledge_base": kb,
                               "chat_only": sorted(set(SUPPORTED_EXTENSIONS) - set(kb))})


@app.get("/kb/<kb_id>/documents")
def list_documents(kb_id: str):
    p = principal(app)
    limit = query_int(app, "limit", 50, lo=1, hi=200)
    offset = query_int(app, "offset", 0, lo=0, hi=10_000_000)
    with transaction() as conn:
        page = documents.list_documents(conn, p, kb_id, limit=limit, offset=offset)
    return json_response(200, {"documents": [document_view(d) for d in page.documents], "total": page.total,
                               "limit": page.limit, "offset": page.offset, "next_offset": page.next_offset})


@app.get("/kb/<kb_id>/ingestion")
def kb_ingestion(kb_id: str):
    p = principal(app)
    with transaction() as conn:
        return json_response(200, documents.kb_ingestion(conn, p, kb_id))


@app.get("/rag/collections/<name>/info")
def collection_info(name: str):
    p = principal(app)
    with transaction() as conn:
        return json_response(200, documents.collection_info(conn, p, name))


@app.get("/rag/documents/<doc_id>/content")
def document_content(doc_id: str):
    p = principal(app)
    with transaction() as conn:
        doc = documents.get_document(conn, p, doc_id)
    text = documents.parsed_text(stage_context().store, doc)
    return json_response(200, {"id": str(doc.id), "filename": doc.filename, "content": text})


@app.get("/rag/documents/<doc_id>/file")
def document_file(doc_id: str):
    p = principal(app)
    with transaction() as conn:
        doc = documents.get_document(conn, p, doc_id)
    link = documents.download(stage_context().store, doc, expires_in=get_settings().download_url_expires_seconds)
    return json_response(200, link)


@app.delete("/rag/documents/<doc_id>")
def delete_document(doc_id: str):
    p = principal(app)
    with transaction() as conn:
        doc = documents.delete_document(conn, p, doc_id)
    stage_context().store.delete_many(documents.stored_objects(doc))
    return json_response(200, {"id": str(doc.id), "deleted": True})


@app.post("/rag/documents/<doc_id>/retry")
def retry_document(doc_id: str):
    p = principal(app)
    with transaction() as conn:
        doc = documents.retry_document(conn, p, stage_context().store, doc_id)
    documents.send_retry(job_queue(), doc)
    return json_response(202, document_view(doc))


handler = http_handler(app)
