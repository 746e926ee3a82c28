"""Every operation of the service's API, as data (``Op``): one place, sent by both clients.

The names follow the service's areas: knowledge bases, documents, search, collections,
grants, sync, teardowns, chat, pools and the catalog. Request bodies are sent as given:
only the fields set, fields this version does not name included.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from sluice_client import models as m
from sluice_client._core import Op, body, form_fields, model, nothing, typed

KnowledgeBase = m.WritableKnowledgeBaseOut | m.KnowledgeBaseOut


def _p(value: str) -> str:
    return quote(str(value), safe="")


# --- catalog ----------------------------------------------------------------------------------

def health() -> Op[m.HealthOut]:
    return Op("GET", "/health", model(m.HealthOut), safe=True)


def embedding_models() -> Op[m.EmbeddingModelsOut]:
    return Op("GET", "/rag/embedding-models", model(m.EmbeddingModelsOut), safe=True)


def vision_models() -> Op[m.VisionModelsOut]:
    return Op("GET", "/rag/vision-models", model(m.VisionModelsOut), safe=True)


def parsers() -> Op[m.ParsersOut]:
    return Op("GET", "/rag/parsers", model(m.ParsersOut), safe=True)


def supported_formats() -> Op[m.SupportedFormatsOut]:
    return Op("GET", "/rag/supported-formats", model(m.SupportedFormatsOut), safe=True)


def text_search_languages() -> Op[m.TextSearchLanguagesOut]:
    return Op("GET", "/rag/text-search-languages", model(m.TextSearchLanguagesOut), safe=True)


# --- knowledge bases --------------------------------------------------------------------------

def list_knowledge_bases() -> Op[m.KnowledgeBasesOut]:
    return Op("GET", "/kb", model(m.KnowledgeBasesOut), safe=True)


def create_knowledge_base(name: str | None = None, *, request: m.CreateKnowledgeBase | dict[str, Any] | None = None,
                          **fields: Any) -> Op[m.WritableKnowledgeBaseOut]:
    """Create a base: ``name`` and any field of ``CreateKnowledgeBase`` (or the whole ``request``)."""
    return Op("POST", "/kb", model(m.WritableKnowledgeBaseOut),
              json=body(request, m.CreateKnowledgeBase, name=name, **fields))


def get_knowledge_base(kb_id: str) -> Op[m.WritableKnowledgeBaseOut | m.KnowledgeBaseOut]:
    return Op("GET", f"/kb/{_p(kb_id)}", typed(KnowledgeBase), safe=True)


def update_knowledge_base(kb_id: str, **changes: Any) -> Op[m.WritableKnowledgeBaseOut]:
    """Change what is named (``UpdateKnowledgeBase``); what is left out stays."""
    return Op("PATCH", f"/kb/{_p(kb_id)}", model(m.WritableKnowledgeBaseOut), safe=True,
              json=body(changes, m.UpdateKnowledgeBase))


def delete_knowledge_base(kb_id: str) -> Op[m.TeardownOut]:
    """Start the base's teardown; ``wait_teardown`` follows it."""
    return Op("DELETE", f"/kb/{_p(kb_id)}", model(m.TeardownOut), safe=True)


def knowledge_base_ingestion(kb_id: str) -> Op[m.KnowledgeBaseIngestionOut]:
    return Op("GET", f"/kb/{_p(kb_id)}/ingestion", model(m.KnowledgeBaseIngestionOut), safe=True)


def grant(kb_id: str, user_id: str, permission: str = "view") -> Op[m.WritableKnowledgeBaseOut]:
    return Op("POST", f"/kb/{_p(kb_id)}/grants", model(m.WritableKnowledgeBaseOut), safe=True,
              json=body(None, m.GrantRequest, user_id=user_id, permission=permission))


def revoke_grant(kb_id: str, user_id: str) -> Op[None]:
    return Op("DELETE", f"/kb/{_p(kb_id)}/grants/{_p(user_id)}", nothing, safe=True)


# --- documents --------------------------------------------------------------------------------

def _metadata(organizational_unit: str | None, document_type: str | None, document_date: str | None,
              ingestion: dict[str, Any] | None) -> dict[str, Any]:
    return {"organizational_unit": organizational_unit, "document_type": document_type,
            "document_date": document_date, "ingestion": ingestion}


def upload_document(kb_id: str, filename: str, content: bytes, *, organizational_unit: str | None = None,
                    document_type: str | None = None, document_date: str | None = None,
                    ingestion: dict[str, Any] | None = None) -> Op[m.AcceptedOut]:
    """The file in the request (up to the service's direct limit, 4 MB by default). A rate limit refuses
    before anything is accepted, so a 429 is retried."""
    return Op("POST", f"/kb/{_p(kb_id)}/documents", model(m.AcceptedOut), safe=True,
              data=form_fields(_metadata(organizational_unit, document_type, document_date, ingestion)),
              files={"file": (filename, content)})


def presign_upload(kb_id: str, filename: str, size: int | None = None, *, organizational_unit: str | None = None,
                   document_type: str | None = None, document_date: str | None = None,
                   ingestion: dict[str, Any] | None = None) -> Op[m.PresignedAcceptedOut]:
    return Op("POST", f"/kb/{_p(kb_id)}/uploads", model(m.PresignedAcceptedOut), safe=True,
              json=body(None, m.PresignRequest, filename=filename, size=size,
                        **_metadata(organizational_unit, document_type, document_date, ingestion)))


def list_documents(kb_id: str, *, limit: int | None = None, offset: int | None = None,
                   status: str | None = None) -> Op[m.DocumentsOut]:
    """A page of a base's documents, newest first; ``status`` (processing, done, error) filters on the server."""
    return Op("GET", f"/kb/{_p(kb_id)}/documents", model(m.DocumentsOut), safe=True,
              params={"limit": limit, "offset": offset, "status": status})


def get_document(doc_id: str) -> Op[m.DocumentOut]:
    return Op("GET", f"/rag/documents/{_p(doc_id)}", model(m.DocumentOut), safe=True)


def delete_document(doc_id: str) -> Op[m.DeletedOut]:
    return Op("DELETE", f"/rag/documents/{_p(doc_id)}", model(m.DeletedOut), safe=True)


def document_content(doc_id: str) -> Op[m.DocumentContentOut]:
    """The document's parsed text."""
    return Op("GET", f"/rag/documents/{_p(doc_id)}/content", model(m.DocumentContentOut), safe=True)


def document_download(doc_id: str) -> Op[m.DownloadOut]:
    """A short-lived link to the stored original."""
    return Op("GET", f"/rag/documents/{_p(doc_id)}/file", model(m.DownloadOut), safe=True)


def retry_document(doc_id: str) -> Op[m.DocumentOut]:
    return Op("POST", f"/rag/documents/{_p(doc_id)}/retry", model(m.DocumentOut))


# --- search and collections -------------------------------------------------------------------

def search(query: str | None = None, collections: list[str] | None = None, *,
           request: m.SearchRequest | dict[str, Any] | None = None, **fields: Any) -> Op[m.SearchOut]:
    """Search ``collections``: top_k, candidates, filters and any field the service takes
    (a field this version does not name is sent as it is)."""
    return Op("POST", "/rag/search", model(m.SearchOut), safe=True,
              json=body(request, m.SearchRequest, query=query, collections=collections, **fields))


def diagnostic_search(query: str | None = None, collections: list[str] | None = None, *,
                      request: m.DiagnosticRequest | dict[str, Any] | None = None,
                      **fields: Any) -> Op[m.DiagnosticOut]:
    """The console search: a wider pool, no threshold, each candidate's scores and gates."""
    return Op("POST", "/rag/search/diagnostic", model(m.DiagnosticOut), safe=True,
              json=body(request, m.DiagnosticRequest, query=query, collections=collections, **fields))


def list_collections() -> Op[m.CollectionsOut]:
    return Op("GET", "/rag/collections", model(m.CollectionsOut), safe=True)


def collection_info(name: str) -> Op[m.CollectionInfoOut]:
    return Op("GET", f"/rag/collections/{_p(name)}/info", model(m.CollectionInfoOut), safe=True)


def filter_values(name: str) -> Op[m.FilterValuesOut]:
    return Op("GET", f"/rag/collections/{_p(name)}/filter-values", model(m.FilterValuesOut), safe=True)


def delete_collection(name: str) -> Op[m.TeardownOut]:
    return Op("DELETE", f"/rag/collections/{_p(name)}", model(m.TeardownOut), safe=True)


# --- teardowns --------------------------------------------------------------------------------

def get_teardown(teardown_id: str) -> Op[m.TeardownOut]:
    return Op("GET", f"/rag/teardowns/{_p(teardown_id)}", model(m.TeardownOut), safe=True)


# --- sync -------------------------------------------------------------------------------------

def list_connectors() -> Op[m.ConnectorsOut]:
    return Op("GET", "/rag/sync/connectors", model(m.ConnectorsOut), safe=True)


def list_sync_sources(kb_id: str) -> Op[m.SyncSourcesOut]:
    return Op("GET", f"/kb/{_p(kb_id)}/sync-sources", model(m.SyncSourcesOut), safe=True)


def create_sync_source(kb_id: str, name: str | None = None, connector: str | None = None,
                       config: dict[str, Any] | None = None, **fields: Any) -> Op[m.SyncSourceOut]:
    return Op("POST", f"/kb/{_p(kb_id)}/sync-sources", model(m.SyncSourceOut),
              json=body(None, m.CreateSyncSource, name=name, connector=connector, config=config, **fields))


def preview_sync_source(kb_id: str, connector: str | None = None, config: dict[str, Any] | None = None,
                        **fields: Any) -> Op[m.SyncSourcePreviewOut]:
    """Who could search what such a source would ingest, and what creating it would refuse (R-SYNC-8)."""
    return Op("POST", f"/kb/{_p(kb_id)}/sync-sources/preview", model(m.SyncSourcePreviewOut), safe=True,
              json=body(None, m.PreviewSyncSource, connector=connector, config=config, **fields))


def get_sync_source(kb_id: str, source_id: str) -> Op[m.SyncSourceOut]:
    return Op("GET", f"/kb/{_p(kb_id)}/sync-sources/{_p(source_id)}", model(m.SyncSourceOut), safe=True)


def update_sync_source(kb_id: str, source_id: str, **changes: Any) -> Op[m.SyncSourceOut]:
    """Change what is named (``UpdateSyncSource``); an explicit None clears secret_id, unit or schedule."""
    return Op("PATCH", f"/kb/{_p(kb_id)}/sync-sources/{_p(source_id)}", model(m.SyncSourceOut), safe=True,
              json=body(changes, m.UpdateSyncSource))


def delete_sync_source(kb_id: str, source_id: str) -> Op[None]:
    return Op("DELETE", f"/kb/{_p(kb_id)}/sync-sources/{_p(source_id)}", nothing, safe=True)


def find_sync_source(source_id: str) -> Op[m.SyncSourceOut]:
    return Op("GET", f"/rag/sync/sources/{_p(source_id)}", model(m.SyncSourceOut), safe=True)


def repoint_sync_source(source_id: str, collection_name: str, kb_id: str | None = None) -> Op[m.SyncSourceOut]:
    return Op("PATCH", f"/rag/sync/sources/{_p(source_id)}", model(m.SyncSourceOut), safe=True,
              json=body(None, m.RepointSyncSource, collection_name=collection_name, kb_id=kb_id))


def clone_sync_source(source_id: str, *, kb_id: str | None = None, collection_name: str | None = None,
                      name: str | None = None) -> Op[m.SyncSourceOut]:
    return Op("POST", f"/rag/sync/sources/{_p(source_id)}/clone", model(m.SyncSourceOut),
              json=body(None, m.CloneSyncSource, kb_id=kb_id, collection_name=collection_name, name=name))


def start_sync_run(kb_id: str, source_id: str) -> Op[m.SyncRunOut]:
    """Start a run; ``wait_run`` follows it."""
    return Op("POST", f"/kb/{_p(kb_id)}/sync-sources/{_p(source_id)}/run", model(m.SyncRunOut))


def list_sync_runs(kb_id: str, source_id: str, *, limit: int | None = None,
                   offset: int | None = None) -> Op[m.SyncRunsOut]:
    return Op("GET", f"/kb/{_p(kb_id)}/sync-sources/{_p(source_id)}/logs", model(m.SyncRunsOut), safe=True,
              params={"limit": limit, "offset": offset})


def get_sync_run(run_id: str) -> Op[m.SyncRunOut]:
    return Op("GET", f"/rag/sync/logs/{_p(run_id)}", model(m.SyncRunOut), safe=True)


def sync_run_files(run_id: str, *, limit: int | None = None, offset: int | None = None,
                   outcome: str | None = None) -> Op[m.SyncFilesOut]:
    return Op("GET", f"/rag/sync/logs/{_p(run_id)}/files", model(m.SyncFilesOut), safe=True,
              params={"limit": limit, "offset": offset, "outcome": outcome})


def retry_failed_sync_files(run_id: str) -> Op[m.SyncRunOut]:
    return Op("POST", f"/rag/sync/logs/{_p(run_id)}/retry-failed", model(m.SyncRunOut))


# --- chat -------------------------------------------------------------------------------------

def upload_chat_file(filename: str, content: bytes) -> Op[m.ChatFileOut]:
    return Op("POST", "/files/upload", model(m.ChatFileOut), safe=True, files={"file": (filename, content)})


def presign_chat_file(filename: str, size: int | None = None) -> Op[m.PresignedChatFileOut]:
    return Op("POST", "/files/uploads", model(m.PresignedChatFileOut), safe=True,
              json=body(None, m.PresignChatFile, filename=filename, size=size))


def get_chat_file(file_id: str) -> Op[m.ChatFileDetailOut]:
    return Op("GET", f"/files/{_p(file_id)}", model(m.ChatFileDetailOut), safe=True)


def delete_chat_file(file_id: str) -> Op[None]:
    return Op("DELETE", f"/files/{_p(file_id)}", nothing, safe=True)


def chat_file_pages(file_id: str, *, max: int | None = None) -> Op[m.PagesOut]:  # noqa: A002 - the API's name
    return Op("GET", f"/files/{_p(file_id)}/pages", model(m.PagesOut), safe=True, params={"max": max})


def list_conversations(*, limit: int | None = None, offset: int | None = None) -> Op[m.ConversationsOut]:
    return Op("GET", "/conversations", model(m.ConversationsOut), safe=True,
              params={"limit": limit, "offset": offset})


def create_conversation(title: str | None = None) -> Op[m.ConversationOut]:
    return Op("POST", "/conversations", model(m.ConversationOut), json=body(None, m.NewConversation, title=title))


def get_conversation(conversation_id: str) -> Op[m.ConversationDetailOut]:
    return Op("GET", f"/conversations/{_p(conversation_id)}", model(m.ConversationDetailOut), safe=True)


def delete_conversation(conversation_id: str) -> Op[None]:
    return Op("DELETE", f"/conversations/{_p(conversation_id)}", nothing, safe=True)


def post_message(conversation_id: str, text: str | None = None,
                 file_ids: list[str] | None = None) -> Op[m.MessageOut]:
    return Op("POST", f"/conversations/{_p(conversation_id)}/messages", model(m.MessageOut),
              json=body(None, m.NewMessage, text=text, file_ids=file_ids))


def list_attachments(conversation_id: str) -> Op[m.AttachmentsOut]:
    return Op("GET", f"/conversations/{_p(conversation_id)}/attachments", model(m.AttachmentsOut), safe=True)


def attach(conversation_id: str, file_id: str) -> Op[m.AttachmentOut]:
    return Op("POST", f"/conversations/{_p(conversation_id)}/attachments", model(m.AttachmentOut),
              json=body(None, m.AttachBody, file_id=file_id))


def remove_attachment(conversation_id: str, attachment_id: str) -> Op[None]:
    return Op("DELETE", f"/conversations/{_p(conversation_id)}/attachments/{_p(attachment_id)}", nothing, safe=True)


def register_attachment(conversation_id: str, attachment_id: str, kb_id: str) -> Op[m.AcceptedOut]:
    """Copy an attachment into a knowledge base the caller may write."""
    return Op("POST", f"/conversations/{_p(conversation_id)}/attachments/{_p(attachment_id)}/register",
              model(m.AcceptedOut), json=body(None, m.RegisterBody, kb_id=kb_id))


def chat_context(conversation_id: str, question: str, mode: str | None = None) -> Op[m.ContextOut]:
    """The context block a model reads for ``question`` (R-CHAT-3)."""
    return Op("POST", f"/conversations/{_p(conversation_id)}/context", model(m.ContextOut), safe=True,
              json=body(None, m.ContextRequest, question=question, mode=mode))


# --- shared pools -----------------------------------------------------------------------------

def share_document(filename: str, content: bytes, recipients: list[str], *, organizational_unit: str | None = None,
                   document_type: str | None = None, document_date: str | None = None,
                   ingestion: dict[str, Any] | None = None) -> Op[m.SharedAcceptedOut]:
    form = form_fields(_metadata(organizational_unit, document_type, document_date, ingestion))
    form["recipients"] = json.dumps(list(recipients))
    return Op("POST", "/pools/documents", model(m.SharedAcceptedOut), safe=True, data=form,
              files={"file": (filename, content)})


def presign_shared_document(filename: str, recipients: list[str], size: int | None = None, *,
                            organizational_unit: str | None = None, document_type: str | None = None,
                            document_date: str | None = None,
                            ingestion: dict[str, Any] | None = None) -> Op[m.SharedPresignedAcceptedOut]:
    return Op("POST", "/pools/uploads", model(m.SharedPresignedAcceptedOut), safe=True,
              json=body(None, m.SharePresignRequest, filename=filename, size=size, recipients=list(recipients),
                        **_metadata(organizational_unit, document_type, document_date, ingestion)))


def list_pool_documents(*, limit: int | None = None, offset: int | None = None) -> Op[m.PoolDocumentsOut]:
    return Op("GET", "/pools/documents", model(m.PoolDocumentsOut), safe=True,
              params={"limit": limit, "offset": offset})


def delete_shared_document(doc_id: str) -> Op[m.DeletedOut]:
    return Op("DELETE", f"/pools/documents/{_p(doc_id)}", model(m.DeletedOut), safe=True)


def revoke_pool_recipient(doc_id: str, user_id: str) -> Op[m.RecipientRemovedOut]:
    return Op("DELETE", f"/pools/documents/{_p(doc_id)}/recipients/{_p(user_id)}", model(m.RecipientRemovedOut),
              safe=True)


# The operations a client exposes, by method name (both clients bind every one; a test checks it).
ALL = [name for name, value in dict(globals()).items()
       if callable(value) and not name.startswith("_") and getattr(value, "__module__", "") == __name__]
