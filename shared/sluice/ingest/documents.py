"""Reading tracked documents through their knowledge base (R-ACC-2)."""

from __future__ import annotations

import uuid

import psycopg

from sluice.access import resolve_base
from sluice.db import documents as doc_repo
from sluice.db.documents import Document
from sluice.errors import CollectionNotFoundError
from sluice.identity import Principal


def get_document(conn: psycopg.Connection, p: Principal, doc_id: str, *, write: bool = False) -> Document:
    try:
        ident = uuid.UUID(doc_id)
    except ValueError:
        raise CollectionNotFoundError() from None
    doc = doc_repo.get(conn, ident)
    if doc is None or doc.kb_id is None:
        raise CollectionNotFoundError()
    resolve_base(conn, p, doc.kb_id, write=write)
    return doc
