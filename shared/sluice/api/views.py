"""Response bodies: rows become responses here, field by field, never by accident."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase


def kb_view(kb: KnowledgeBase, *, writable: bool = False) -> dict[str, Any]:
    """A base as its reader sees it; its key, endpoint and grants only to those who may change it."""
    body: dict[str, Any] = {
        "id": str(kb.id),
        "name": kb.name,
        "collection_name": kb.collection_name,
        "scope": kb.scope,
        "org_id": kb.org_id,
        "owner_id": kb.owner_id,
        "is_default": kb.is_default,
        "description": kb.description,
        "embedding_provider": kb.embedding_provider,
        "embedding_model": kb.embedding_model,
        "embedding_dim": kb.embedding_dim,
        "ingestion_config": kb.ingestion_config,
        "created_by": kb.created_by,
        "created_at": kb.created_at.isoformat() if kb.created_at else None,
        "can_write": writable,
    }
    if writable:
        # Which key pays and where the workers send text: a writer's business, not every reader's.
        body["embedding_base_url"] = kb.embedding_base_url
        body["embedding_secret_id"] = kb.embedding_secret_id
        body["grants"] = [{"user_id": u, "permission": perm} for u, perm in sorted(kb.grants.items())]
    return body


def collection_view(name: str, bases: Sequence[KnowledgeBase]) -> dict[str, Any]:
    """One collection name, once, with the bases on it the caller reaches (they share one embedding space)."""
    return {
        "name": name,
        "embedding_model": bases[0].embedding_model,
        "embedding_dim": bases[0].embedding_dim,
        "knowledge_bases": [
            {"id": str(kb.id), "name": kb.name, "scope": kb.scope, "org_id": kb.org_id} for kb in bases
        ],
    }


def document_view(d: Document) -> dict[str, Any]:
    return {
        "id": str(d.id),
        "kb_id": str(d.kb_id) if d.kb_id else None,
        "collection_name": d.collection_name,
        "filename": d.filename,
        "filesize": d.filesize,
        "filetype": d.filetype,
        "status": d.status,
        "stage": d.stage,
        "error_message": d.error_message,
        "document_id": str(d.vector_document_id) if d.vector_document_id else None,
        "chunk_count": d.chunk_count,
        "storage_path": d.storage_path,
        # A synced or removed file has no stored original: nothing to download or retry from.
        "has_file": d.storage_path is not None,
        "attempt": d.attempt,
        "source": d.source,
        "source_path": d.source_path,
        "content_hash": d.content_hash,
        "organizational_unit": d.organizational_unit,
        "document_type": d.document_type,
        "document_date": d.document_date.isoformat() if d.document_date else None,
        "uploaded_by": d.uploaded_by,
        "created_at": d.created_at.isoformat() if d.created_at else None,
        "completed_at": d.completed_at.isoformat() if d.completed_at else None,
    }
