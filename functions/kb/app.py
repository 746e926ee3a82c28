"""Knowledge bases, document status, health and the embedding catalog."""

from __future__ import annotations

from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response

from sluice.access import bases, can_write
from sluice.api.http import build_resolver, json_response, parse_json, principal
from sluice.api.views import collection_view, document_view, kb_view
from sluice.db.connection import transaction
from sluice.embedding import load_catalog
from sluice.ingest import documents
from sluice.observability import http_handler
from sluice.wiring import key_vault

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
        kb = bases.create_base(conn, p, body, vault=key_vault())
    return json_response(201, kb_view(kb, writable=True))


@app.get("/kb")
def list_kbs():
    p = principal(app)
    with transaction() as conn:
        found = bases.list_bases(conn, p)
    return json_response(200, {"knowledge_bases": [kb_view(kb, writable=can_write(p, kb)) for kb in found]})


@app.get("/kb/<kb_id>")
def get_kb(kb_id: str):
    p = principal(app)
    with transaction() as conn:
        kb = bases.get_base(conn, p, kb_id)
    return json_response(200, kb_view(kb, writable=can_write(p, kb)))


@app.patch("/kb/<kb_id>")
def update_kb(kb_id: str):
    p = principal(app)
    body = parse_json(app, bases.UpdateKnowledgeBase)
    with transaction() as conn:
        kb = bases.update_base(conn, p, kb_id, body, vault=key_vault())
    return json_response(200, kb_view(kb, writable=True))


@app.post("/kb/<kb_id>/grants")
def grant(kb_id: str):
    p = principal(app)
    body = parse_json(app, bases.GrantRequest)
    with transaction() as conn:
        kb = bases.grant_access(conn, p, kb_id, body)
    return json_response(201, kb_view(kb, writable=True))


@app.delete("/kb/<kb_id>/grants/<user_id>")
def revoke(kb_id: str, user_id: str):
    p = principal(app)
    with transaction() as conn:
        # The route matches the raw path; a user id such as auth0|123 arrives percent-encoded.
        bases.revoke_access(conn, p, kb_id, unquote(user_id))
    return Response(status_code=204, body="")


@app.get("/rag/collections")
def list_collections():
    p = principal(app)
    with transaction() as conn:
        found = bases.list_collections(conn, p)
    return json_response(200, {"collections": [collection_view(c.name, c.bases) for c in found]})


@app.get("/rag/documents/<doc_id>")
def get_document(doc_id: str):
    p = principal(app)
    with transaction() as conn:
        doc = documents.get_document(conn, p, doc_id)
    return json_response(200, document_view(doc))


handler = http_handler(app)
