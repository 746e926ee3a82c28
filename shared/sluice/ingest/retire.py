"""What goes when a document is replaced or removed (R-DOC-6): its rows and chunks inside the
transaction that decides it, its stored objects after that transaction commits."""

from __future__ import annotations

import logging

from sluice.db import documents as doc_repo
from sluice.db.connection import Connection
from sluice.db.documents import Document
from sluice.storage import ObjectStore, content_key
from sluice.vectors import store as vector_store

log = logging.getLogger("sluice.ingest")


def delete_row_and_chunks(conn: Connection, row: Document) -> None:
    doc_repo.get(conn, row.id, for_update=True)
    vector_store.delete_document_chunks(conn, row.collection_name, row.vector_document_id or row.id)
    doc_repo.delete(conn, row.id)


def retire_replaced(conn: Connection, doc: Document) -> list[Document]:
    """Delete the rows (and chunks) a completing document replaces, in its transaction."""
    retired = doc_repo.replaced_by(conn, doc)
    for old in retired:
        vector_store.delete_document_chunks(conn, old.collection_name, old.vector_document_id or old.id)
        doc_repo.delete(conn, old.id)
    return retired


def retire_absent_members(conn: Connection, archive: Document, replaced: list[Document],
                          unpacked: set[str]) -> list[Document]:
    """The members of the archives ``archive`` replaces that it no longer holds: gone with them.

    A member it still holds stays searchable until its own replacement is done.
    """
    gone: list[Document] = []
    for old in replaced:
        if old.kb_id is None:
            continue
        for member in doc_repo.archive_members(conn, old.kb_id, old.source_path or old.filename,
                                               created_before=archive.created_at):
            if member.source_path not in unpacked:
                delete_row_and_chunks(conn, member)
                gone.append(member)
    return gone


def forget_objects(store: ObjectStore, row: Document, *, keep: str | None = None) -> None:
    """Delete what Sluice stored for a row that is gone: its copy of the file and its text."""
    keys = [content_key(row.id)]
    if row.storage_path and row.storage_path != keep:
        keys.append(row.storage_path)
    try:
        store.delete_many(keys)
    except Exception:
        # The row and its chunks are gone already; a leftover object is logged, not a failure.
        log.exception("could not delete the objects of a removed document", extra={"document_id": str(row.id)})
