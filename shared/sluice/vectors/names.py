"""What a collection may be called (R-VEC-2). The one place a table name is built."""

from __future__ import annotations

import re

from psycopg import sql

from sluice.errors import ValidationError

MAX_COLLECTION_CHARS = 45
_IDENT = re.compile(r"[a-z_][a-z0-9_]*")
RESERVED = frozenset({"all"})
# Every table the migrations in infra/migrations create: a collection's table (rag_<name>) must
# never be one of them, nor strip to one. tests/unit/test_schema_tables.py fails when a migration
# creates a table this does not list.
SCHEMA_TABLES = frozenset({
    "knowledge_bases", "knowledge_base_grants", "documents", "collection_teardowns", "schema_migrations",
    "upload_quotas", "upload_events",
    # source syncs (0006)
    "sync_sources", "sync_logs", "sync_log_files", "document_claims", "sync_audit",
    # a listing of several steps: its journal (0023)
    "sync_list_journal",
    # documents shared into private pools (0009)
    "document_recipients",
    # teardowns' document lists (0007)
    "teardown_documents",
    # BM25's per-collection statistics (0014)
    "collection_text_stats", "collection_lexemes",
    # a tenant's OCR pages a day (0017)
    "ocr_usage",
    # Chat (0008): files, conversations, messages, attachments and the attachments' chunks.
    "chat_files", "conversations", "chat_messages", "chat_attachments", "chat_attachment_chunks",
})


def validate_collection_name(name: str, field: str = "collection_name") -> str:
    problem = None
    if not isinstance(name, str) or not name:
        problem = "A collection name is required."
    elif len(name) > MAX_COLLECTION_CHARS:
        problem = f"A collection name is at most {MAX_COLLECTION_CHARS} characters."
    elif not _IDENT.fullmatch(name):
        problem = (
            "A collection name is a bare lower-case identifier: letters a-z, digits and "
            "underscores, not starting with a digit."
        )
    elif name in RESERVED:
        problem = f"'{name}' is reserved."
    elif name in SCHEMA_TABLES or f"rag_{name}" in SCHEMA_TABLES:
        # Both ways round: `documents` makes rag_documents, which anything stripping the
        # prefix reads as the tracking table; a schema table named rag_x would be x's table.
        problem = f"'{name}' names a table Sluice owns once prefixed; choose another name."
    if problem:
        raise ValidationError("Invalid collection name", fields={field: problem})
    return name


def is_runtime_table(table: str) -> bool:
    """Whether a table of the database is a collection's runtime table, not one the migrations own.

    The predicate read the other way round from ``validate_collection_name``: ``rag_`` and a
    usable collection name after it, and no migration creates it (``SCHEMA_TABLES``, which
    tests/unit/test_schema_tables.py keeps equal to what the migrations create). ``sluice
    collections`` lists by it and a teardown drops only what it admits.
    """
    if table in SCHEMA_TABLES or not table.startswith("rag_"):
        return False
    try:
        validate_collection_name(table.removeprefix("rag_"))
    except ValidationError:
        return False
    return True


def table_name(collection: str) -> str:
    return "rag_" + validate_collection_name(collection)


def table_ident(collection: str) -> sql.Identifier:
    return sql.Identifier(table_name(collection))


def index_name(collection: str, suffix: str) -> str:
    return f"{table_name(collection)}_{suffix}"


def index_ident(collection: str, suffix: str) -> sql.Identifier:
    return sql.Identifier(index_name(collection, suffix))
