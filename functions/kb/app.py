"""Knowledge bases, document status, health and the embedding catalog."""

from __future__ import annotations

from aws_lambda_powertools.logging import correlation_paths

from sluice.access import bases
from sluice.api.http import build_resolver, json_response, parse_json, principal
from sluice.api.views import document_view, kb_view
from sluice.db.connection import transaction
from sluice.embedding import load_catalog
from sluice.ingest import documents
from sluice.observability import logger, metrics, tracer

app = build_resolver()


@app.get("/health")
def health():
    return json_response(200, {"status": "ok"})


@app.get("/rag/embedding-models")
def embedding_models():
    principal(app)
    return json_response(200, {"models": [m.__dict__ | {"allowed_dims": list(m.allowed_dims)}
                                          for m in load_catalog()]})


@app.post("/kb")
def create_kb():
    p = principal(app)
    body = parse_json(app, bases.CreateKnowledgeBase)
    with transaction() as conn:
        kb = bases.create_base(conn, p, body)
    return json_response(201, kb_view(kb))


@app.get("/kb")
def list_kbs():
    p = principal(app)
    with transaction() as conn:
        found = bases.list_bases(conn, p)
    return json_response(200, {"knowledge_bases": [kb_view(kb) for kb in found]})


@app.get("/kb/<kb_id>")
def get_kb(kb_id: str):
    p = principal(app)
    with transaction() as conn:
        kb = bases.get_base(conn, p, kb_id)
    return json_response(200, kb_view(kb))


@app.get("/rag/documents/<doc_id>")
def get_document(doc_id: str):
    p = principal(app)
    with transaction() as conn:
        doc = documents.get_document(conn, p, doc_id)
    return json_response(200, document_view(doc))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event, context):
    return app.resolve(event, context)
