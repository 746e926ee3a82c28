"""Knowledge bases, grants, reachable collections, a document's status, health, the embedding
catalog, the vision-model catalog and the OpenAPI document."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body

from sluice import bases
from sluice.access import can_write, grants
from sluice.api.http import build_resolver, principal, respond
from sluice.api.openapi import committed_document
from sluice.api.responses import created, no_content
from sluice.api.views import (
    CollectionsOut,
    DocumentOut,
    EmbeddingModelsOut,
    HealthOut,
    KnowledgeBaseOut,
    KnowledgeBasesOut,
    TextSearchLanguagesOut,
    WritableKnowledgeBaseOut,
    catalog_view,
    collection_view,
    document_view,
    kb_view,
    writable_kb_view,
)
from sluice.api.views_parsers import ParsersOut, parsers_view
from sluice.api.views_vision import VisionModelsOut, vision_models_view
from sluice.config import current
from sluice.config.functions import KbFunction
from sluice.db.connection import transaction
from sluice.embedding import load_catalog
from sluice.ingest import documents
from sluice.llm.catalog import load_chat_catalog
from sluice.observability import http_handler
from sluice.vectors import fulltext
from sluice.wiring import default_embedding, key_vault

app = build_resolver()


@app.get("/health", summary="Liveness: answers without a token")
def health() -> HealthOut:
    return HealthOut(status="ok")


@app.get("/openapi.json", summary="This API's OpenAPI 3.1 document", include_in_schema=False)
def openapi_document() -> Response[Any]:
    return Response(status_code=200, content_type="application/json", body=committed_document())


@app.get("/rag/embedding-models", summary="The embedding catalog (R-EMB-2)")
def embedding_models() -> EmbeddingModelsOut:
    principal(app)
    return catalog_view(load_catalog(), default_embedding())


@app.get("/rag/vision-models", summary="The vision models a collection may describe images with (R-PARSE-6)")
def vision_models() -> VisionModelsOut:
    principal(app)
    return vision_models_view(load_chat_catalog())


@app.get("/rag/parsers", summary="The parsers and OCR this deployment can run (R-PARSE-7)")
def parsers() -> ParsersOut:
    principal(app)
    return parsers_view(current(KbFunction).ocr_provider)


@app.get("/rag/text-search-languages", summary="The text search languages a base may choose (R-SRCH-7)")
def text_search_languages() -> TextSearchLanguagesOut:
    principal(app)
    with transaction() as conn:
        return TextSearchLanguagesOut(languages=fulltext.text_search_languages(conn), default=fulltext.DEFAULT_LANGUAGE)


@app.post("/kb", summary="Create a knowledge base", responses=created(WritableKnowledgeBaseOut))
def create_kb(body: Annotated[bases.CreateKnowledgeBase, Body()]) -> Response[WritableKnowledgeBaseOut]:
    p = principal(app)
    with transaction() as conn:
        kb = bases.create_base(conn, p, body, vault=key_vault(), default=default_embedding())
    return respond(201, writable_kb_view(kb))


@app.get("/kb", summary="The knowledge bases the caller reads")
def list_kbs() -> KnowledgeBasesOut:
    p = principal(app)
    with transaction() as conn:
        found = bases.list_bases(conn, p)
    return KnowledgeBasesOut(knowledge_bases=[kb_view(kb, writable=can_write(p, kb)) for kb in found])


@app.get("/kb/<kb_id>", summary="One knowledge base")
def get_kb(kb_id: str) -> WritableKnowledgeBaseOut | KnowledgeBaseOut:
    p = principal(app)
    with transaction() as conn:
        kb = bases.get_base(conn, p, kb_id)
    return kb_view(kb, writable=can_write(p, kb))


@app.patch("/kb/<kb_id>", summary="Change a base's name, description, provider, endpoint, key or chunking")
def update_kb(kb_id: str, body: Annotated[bases.UpdateKnowledgeBase, Body()]) -> WritableKnowledgeBaseOut:
    p = principal(app)
    with transaction() as conn:
        kb = bases.update_base(conn, p, kb_id, body, vault=key_vault())
    return writable_kb_view(kb)


@app.post("/kb/<kb_id>/grants", summary="Widen an organization base for one member",
          responses=created(WritableKnowledgeBaseOut))
def grant(kb_id: str, body: Annotated[grants.GrantRequest, Body()]) -> Response[WritableKnowledgeBaseOut]:
    p = principal(app)
    with transaction() as conn:
        kb = grants.grant_access(conn, p, kb_id, body)
    return respond(201, writable_kb_view(kb))


@app.delete("/kb/<kb_id>/grants/<user_id>", summary="Remove a member's grant", responses=no_content())
def revoke(kb_id: str, user_id: str) -> Response[None]:
    p = principal(app)
    with transaction() as conn:
        # The route matches the raw path; a user id such as auth0|123 arrives percent-encoded.
        grants.revoke_access(conn, p, kb_id, unquote(user_id))
    return respond(204, None)


@app.get("/rag/collections", summary="Each collection the caller reaches, with its bases")
def list_collections() -> CollectionsOut:
    p = principal(app)
    with transaction() as conn:
        found = bases.list_collections(conn, p)
    return CollectionsOut(collections=[collection_view(c.name, c.bases) for c in found])


@app.get("/rag/documents/<doc_id>", summary="A document's status")
def get_document(doc_id: str) -> DocumentOut:
    p = principal(app)
    with transaction() as conn:
        doc = documents.get_document(conn, p, doc_id)
    return document_view(doc)


handler = http_handler(app, settings=KbFunction)
