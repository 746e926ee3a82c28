"""Response bodies: rows become responses here, field by field, never by accident."""

from __future__ import annotations

from typing import Any

from sluice.db.documents import Document
from sluice.db.knowledge_bases import KnowledgeBase


def kb_view(kb: KnowledgeBase) -> dict[str, Any]:
    return {
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
        "embedding_base_url": kb.embedding_base_url,
        "embedding_secret_id": kb.embedding_secret_id,
        "ingestion_config": kb.ingestion_config,
        "created_by": kb.created_by,
        "created_at": kb.created_at.isoformat() if kb.created_at else None,
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
