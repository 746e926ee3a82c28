"""An organization's recipients base (R-ACC-6, ``sluice.access.shared``): where the documents its
members share into each other's private pools are filed, created on the first share."""

from __future__ import annotations

from sluice.bases.names import claim_name, derive_collection_name
from sluice.bases.service import DefaultEmbedding
from sluice.chunking import validate_collection_config
from sluice.db import knowledge_bases as kb_repo
from sluice.db.connection import Connection
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.embedding import find_model
from sluice.errors import ConflictError
from sluice.identity import Principal
from sluice.vectors.names import validate_collection_name

_BASE_NAME = "Shared private documents"


def recipients_base(conn: Connection, org_id: str, created_by: str, default: DefaultEmbedding) -> KnowledgeBase:
    """The organization's recipients base, created on its first share with the deployment's default embedding.

    Its collection name is random and claimed like any derived name, so nobody can
    prepare a table (and an embedding endpoint) for it ahead of time.
    """
    found = _existing(conn, org_id)
    if found is not None:
        return found
    entry = find_model(default.provider, default.model)
    config = validate_collection_config({}, max_input_tokens=entry.max_input_tokens)
    sharer = Principal(user_id=created_by, org_id=org_id, permissions=frozenset(), is_app_admin=False)
    for attempt in range(3):
        name = validate_collection_name(derive_collection_name("shared pool"))
        try:
            if not claim_name(conn, sharer, name):
                break
        except ConflictError:
            pass
        if attempt == 2:
            raise ConflictError("No free collection name was found for the shared pool; try again.")
    kb_repo.insert_recipients_base(
        conn, name=_BASE_NAME, collection_name=name, org_id=org_id,
        description="Documents shared into members' private pools; each is read by its recipients only.",
        model=entry, ingestion_config=config.model_dump(exclude_none=True), created_by=created_by)
    created = _existing(conn, org_id)
    assert created is not None
    return created


def _existing(conn: Connection, org_id: str) -> KnowledgeBase | None:
    kb_id = kb_repo.recipients_base_id(conn, org_id)
    return kb_repo.get(conn, kb_id) if kb_id is not None else None
