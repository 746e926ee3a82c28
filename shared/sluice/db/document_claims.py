"""The document_claims table: which source lists which document, under which address, with the
change signal the source last saw for it; and the indexed lookups that match a remote file to a
stored document (R-SYNC-3)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sluice.db.connection import Connection
from sluice.db.documents import Document

_DOC_FIELDS = ", ".join(f"d.{f}" for f in Document.__dataclass_fields__)
# A claim with its document, as ``_claims`` reads the rows.
_CLAIMS_OF_DOCUMENTS = f"""SELECT c.source_path AS claim_path, c.etag AS claim_etag, c.size AS claim_size,
               c.updated_at AS claim_updated_at, {_DOC_FIELDS}
          FROM document_claims c JOIN documents d ON d.id = c.document_id"""


def path_digest(source_path: str) -> bytes:
    """What the tables' generated ``path_digest`` column holds: the MD5 of the UTF-8 address (an index
    key, not a security measure: every lookup compares the address itself too)."""
    return hashlib.md5(source_path.encode("utf-8"), usedforsecurity=False).digest()


@dataclass(frozen=True)
class Claim:
    """A source's claim on a document, with the document as it is now."""

    source_path: str
    etag: str | None
    size: int | None
    updated_at: datetime
    document: Document


def claims_at(conn: Connection, source_id: uuid.UUID, kb_id: uuid.UUID, paths: Sequence[str]
              ) -> dict[str, list[Claim]]:
    """The source's claims at each of ``paths`` on documents of its base, most recently confirmed first."""
    if not paths:
        return {}
    rows = conn.execute(
        f"""
        {_CLAIMS_OF_DOCUMENTS}
         WHERE c.source_id = %(src)s AND d.kb_id = %(kb)s
           AND c.path_digest = ANY(%(digests)s) AND c.source_path = ANY(%(paths)s::text[])
         ORDER BY c.updated_at DESC, d.created_at DESC
        """,
        {"src": source_id, "kb": kb_id, "paths": list(paths), "digests": [path_digest(p) for p in paths]},
    ).fetchall()
    out: dict[str, list[Claim]] = {}
    for found in _claims(rows):
        out.setdefault(found.source_path, []).append(found)
    return out


def _claims(rows: list[dict[str, Any]]) -> list[Claim]:
    out = []
    for r in rows:
        claim_path, etag, size, updated = (r.pop("claim_path"), r.pop("claim_etag"), r.pop("claim_size"),
                                           r.pop("claim_updated_at"))
        out.append(Claim(claim_path, etag, size, updated, Document(**r)))
    return out


def left_behind(conn: Connection, source_id: uuid.UUID, kb_id: uuid.UUID, run_id: uuid.UUID,
                etags: Sequence[str]) -> dict[str, list[Claim]]:
    """The source's claims carrying one of ``etags`` at an address the run did not list, on a document of
    its base still at that address, most recently confirmed first: where a renamed file came from."""
    if not etags:
        return {}
    rows = conn.execute(
        f"""
        {_CLAIMS_OF_DOCUMENTS}
         WHERE c.source_id = %(src)s AND d.kb_id = %(kb)s AND c.etag = ANY(%(etags)s::text[])
           AND d.source_path = c.source_path
           AND NOT EXISTS (SELECT 1 FROM sync_log_files f
                            WHERE f.run_id = %(run)s AND f.batch >= 0
                              AND f.path_digest = c.path_digest AND f.source_path = c.source_path)
         ORDER BY c.updated_at DESC, d.created_at DESC
        """,
        {"src": source_id, "kb": kb_id, "run": run_id, "etags": list(etags)},
    ).fetchall()
    out: dict[str, list[Claim]] = {}
    for found in _claims(rows):
        out.setdefault(found.etag or "", []).append(found)
    return out


def claim(conn: Connection, source_id: uuid.UUID, document_id: uuid.UUID, source_path: str,
          etag: str | None, size: int | None) -> None:
    """Record (or confirm) that the source lists the document at ``source_path`` with this signal.

    A document deleted meanwhile is not claimed (nothing is inserted).
    """
    conn.execute(
        """
        INSERT INTO document_claims (source_id, document_id, source_path, etag, size)
        SELECT %(src)s, %(doc)s, %(path)s, %(etag)s, %(size)s
         WHERE EXISTS (SELECT 1 FROM documents WHERE id = %(doc)s)
        ON CONFLICT (source_id, document_id)
        DO UPDATE SET source_path = EXCLUDED.source_path, etag = EXCLUDED.etag, size = EXCLUDED.size,
                      updated_at = now()
        """,
        {"src": source_id, "doc": document_id, "path": source_path, "etag": etag, "size": size},
    )


def release(conn: Connection, source_id: uuid.UUID, document_id: uuid.UUID) -> bool:
    return conn.execute("DELETE FROM document_claims WHERE source_id = %s AND document_id = %s",
                        (source_id, document_id)).rowcount > 0


def release_all(conn: Connection, source_id: uuid.UUID) -> int:
    return conn.execute("DELETE FROM document_claims WHERE source_id = %s", (source_id,)).rowcount


def claimed(conn: Connection, document_id: uuid.UUID) -> bool:
    """Whether any source still claims the document."""
    row = conn.execute("SELECT EXISTS (SELECT 1 FROM document_claims WHERE document_id = %s) AS held",
                       (document_id,)).fetchone()
    assert row is not None
    return bool(row["held"])


def claimants(conn: Connection, document_id: uuid.UUID) -> list[uuid.UUID]:
    rows = conn.execute("SELECT source_id FROM document_claims WHERE document_id = %s ORDER BY source_id",
                        (document_id,)).fetchall()
    return [r["source_id"] for r in rows]


def unlisted(conn: Connection, source_id: uuid.UUID, run_id: uuid.UUID, *, limit: int
             ) -> list[tuple[uuid.UUID, str]]:
    """The source's claims whose address the run did not list: (document id, address)."""
    rows = conn.execute(
        """
        SELECT c.document_id, c.source_path FROM document_claims c
         WHERE c.source_id = %(src)s
           AND NOT EXISTS (SELECT 1 FROM sync_log_files f
                            WHERE f.run_id = %(run)s AND f.batch >= 0
                              AND f.path_digest = c.path_digest AND f.source_path = c.source_path)
         ORDER BY c.document_id
         LIMIT %(limit)s
        """,
        {"src": source_id, "run": run_id, "limit": limit},
    ).fetchall()
    return [(r["document_id"], r["source_path"]) for r in rows]


# --- matching a remote file to a stored document (R-SYNC-3) -----------------------------------------

def by_addresses(conn: Connection, kb_id: uuid.UUID, paths: Sequence[str]) -> dict[str, list[Document]]:
    """The base's documents at each address, newest first (index documents_kb_source_path_idx)."""
    if not paths:
        return {}
    rows = conn.execute(
        f"""
        SELECT {_DOC_FIELDS} FROM documents d
         WHERE d.kb_id = %s AND d.source_path = ANY(%s::text[])
         ORDER BY d.created_at DESC, d.id
        """,
        (kb_id, list(paths)),
    ).fetchall()
    out: dict[str, list[Document]] = {}
    for r in rows:
        doc = Document(**r)
        out.setdefault(doc.source_path or "", []).append(doc)
    return out


def unaddressed_by_names(conn: Connection, kb_id: uuid.UUID, names: Sequence[str]) -> dict[str, list[Document]]:
    """The base's documents named one of ``names`` that no address claims (uploads), newest first.

    A document naming a different address is never a candidate: ``a/readme.md`` and
    ``b/readme.md`` are two files (index documents_kb_unaddressed_filename_idx).
    """
    if not names:
        return {}
    rows = conn.execute(
        f"""
        SELECT {_DOC_FIELDS} FROM documents d
         WHERE d.kb_id = %s AND d.source_path IS NULL AND d.filename = ANY(%s::text[])
         ORDER BY d.created_at DESC, d.id
        """,
        (kb_id, list(names)),
    ).fetchall()
    out: dict[str, list[Document]] = {}
    for r in rows:
        doc = Document(**r)
        out.setdefault(doc.filename, []).append(doc)
    return out


def by_content(conn: Connection, kb_id: uuid.UUID, content_hash: str, source_path: str) -> Document | None:
    """A finished document of the base with these bytes, at this address or at none (documents_kb_content_hash_idx)."""
    row = conn.execute(
        f"""
        SELECT {_DOC_FIELDS} FROM documents d
         WHERE d.kb_id = %s AND d.content_hash = %s AND d.status = 'done'
           AND (d.source_path IS NULL OR d.source_path = %s)
         ORDER BY d.created_at DESC, d.id LIMIT 1
        """,
        (kb_id, content_hash, source_path),
    ).fetchone()
    return Document(**row) if row else None
