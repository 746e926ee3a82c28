"""Each route's name and area in the OpenAPI document: an operation id that reads as a method name
(sluice-client's methods bear these names) and one tag per area. A route missing here fails the build
of the document (``sluice openapi``), so a new route is named when it is added."""

from __future__ import annotations

TAGS: dict[str, str] = {
    "knowledge bases": "Knowledge bases, their collections and their grants.",
    "documents": "Uploads, documents, their text and their indexing status.",
    "search": "Search, the diagnostic search, and the values filters take.",
    "sync": "Sync sources, their connectors and their runs.",
    "teardowns": "Deleting a base or a collection, and following it.",
    "chat": "Chat files, conversations, attachments and the context a model reads.",
    "pools": "Documents shared into several users' private pools.",
    "catalog": "What the deployment offers: health, models, formats, languages, parsers.",
}

# (method, path) -> (tag, operation id)
OPERATIONS: dict[tuple[str, str], tuple[str, str]] = {
    ("get", "/health"): ("catalog", "health"),
    ("get", "/rag/embedding-models"): ("catalog", "embedding_models"),
    ("get", "/rag/vision-models"): ("catalog", "vision_models"),
    ("get", "/rag/parsers"): ("catalog", "parsers"),
    ("get", "/rag/supported-formats"): ("catalog", "supported_formats"),
    ("get", "/rag/text-search-languages"): ("catalog", "text_search_languages"),
    ("get", "/kb"): ("knowledge bases", "list_knowledge_bases"),
    ("post", "/kb"): ("knowledge bases", "create_knowledge_base"),
    ("get", "/kb/{kb_id}"): ("knowledge bases", "get_knowledge_base"),
    ("patch", "/kb/{kb_id}"): ("knowledge bases", "update_knowledge_base"),
    ("post", "/kb/{kb_id}/grants"): ("knowledge bases", "grant"),
    ("delete", "/kb/{kb_id}/grants/{user_id}"): ("knowledge bases", "revoke_grant"),
    ("get", "/rag/collections"): ("knowledge bases", "list_collections"),
    ("post", "/kb/{kb_id}/documents"): ("documents", "upload_document"),
    ("post", "/kb/{kb_id}/uploads"): ("documents", "presign_upload"),
    ("get", "/kb/{kb_id}/documents"): ("documents", "list_documents"),
    ("get", "/kb/{kb_id}/ingestion"): ("documents", "knowledge_base_ingestion"),
    ("get", "/rag/collections/{name}/info"): ("documents", "collection_info"),
    ("get", "/rag/documents/{doc_id}"): ("documents", "get_document"),
    ("delete", "/rag/documents/{doc_id}"): ("documents", "delete_document"),
    ("get", "/rag/documents/{doc_id}/content"): ("documents", "document_content"),
    ("get", "/rag/documents/{doc_id}/file"): ("documents", "document_download"),
    ("post", "/rag/documents/{doc_id}/retry"): ("documents", "retry_document"),
    ("post", "/rag/search"): ("search", "search"),
    ("post", "/rag/search/diagnostic"): ("search", "diagnostic_search"),
    ("get", "/rag/collections/{name}/filter-values"): ("search", "filter_values"),
    ("get", "/rag/sync/connectors"): ("sync", "list_connectors"),
    ("get", "/kb/{kb_id}/sync-sources"): ("sync", "list_sync_sources"),
    ("post", "/kb/{kb_id}/sync-sources"): ("sync", "create_sync_source"),
    ("post", "/kb/{kb_id}/sync-sources/preview"): ("sync", "preview_sync_source"),
    ("get", "/kb/{kb_id}/sync-sources/{source_id}"): ("sync", "get_sync_source"),
    ("patch", "/kb/{kb_id}/sync-sources/{source_id}"): ("sync", "update_sync_source"),
    ("delete", "/kb/{kb_id}/sync-sources/{source_id}"): ("sync", "delete_sync_source"),
    ("post", "/kb/{kb_id}/sync-sources/{source_id}/run"): ("sync", "start_sync_run"),
    ("get", "/kb/{kb_id}/sync-sources/{source_id}/logs"): ("sync", "list_sync_runs"),
    ("get", "/rag/sync/sources/{source_id}"): ("sync", "find_sync_source"),
    ("patch", "/rag/sync/sources/{source_id}"): ("sync", "repoint_sync_source"),
    ("post", "/rag/sync/sources/{source_id}/clone"): ("sync", "clone_sync_source"),
    ("get", "/rag/sync/logs/{run_id}"): ("sync", "get_sync_run"),
    ("get", "/rag/sync/logs/{run_id}/files"): ("sync", "sync_run_files"),
    ("post", "/rag/sync/logs/{run_id}/retry-failed"): ("sync", "retry_failed_sync_files"),
    ("delete", "/kb/{kb_id}"): ("teardowns", "delete_knowledge_base"),
    ("delete", "/rag/collections/{name}"): ("teardowns", "delete_collection"),
    ("get", "/rag/teardowns/{teardown_id}"): ("teardowns", "get_teardown"),
    ("post", "/files/upload"): ("chat", "upload_chat_file"),
    ("post", "/files/uploads"): ("chat", "presign_chat_file"),
    ("get", "/files/{file_id}"): ("chat", "get_chat_file"),
    ("delete", "/files/{file_id}"): ("chat", "delete_chat_file"),
    ("get", "/files/{file_id}/pages"): ("chat", "chat_file_pages"),
    ("get", "/conversations"): ("chat", "list_conversations"),
    ("post", "/conversations"): ("chat", "create_conversation"),
    ("get", "/conversations/{conversation_id}"): ("chat", "get_conversation"),
    ("delete", "/conversations/{conversation_id}"): ("chat", "delete_conversation"),
    ("post", "/conversations/{conversation_id}/messages"): ("chat", "post_message"),
    ("get", "/conversations/{conversation_id}/attachments"): ("chat", "list_attachments"),
    ("post", "/conversations/{conversation_id}/attachments"): ("chat", "attach"),
    ("delete", "/conversations/{conversation_id}/attachments/{attachment_id}"): ("chat", "remove_attachment"),
    ("post", "/conversations/{conversation_id}/attachments/{attachment_id}/register"): ("chat", "register_attachment"),
    ("post", "/conversations/{conversation_id}/context"): ("chat", "chat_context"),
    ("post", "/pools/documents"): ("pools", "share_document"),
    ("post", "/pools/uploads"): ("pools", "presign_shared_document"),
    ("get", "/pools/documents"): ("pools", "list_pool_documents"),
    ("delete", "/pools/documents/{doc_id}"): ("pools", "delete_shared_document"),
    ("delete", "/pools/documents/{doc_id}/recipients/{user_id}"): ("pools", "revoke_pool_recipient"),
}


def name(method: str, path: str) -> tuple[str, str]:
    """The route's (tag, operation id); a route without one is refused with the file to add it to."""
    found = OPERATIONS.get((method.lower(), path))
    if found is None:
        raise KeyError(f"{method.upper()} {path} has no operation id: add it to OPERATIONS in sluice/api/operations.py")
    return found
