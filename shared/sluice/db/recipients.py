"""The document_recipients table (R-ACC-6): who a shared document is for, and the private-pool
listing that joins a user's own documents with the ones shared with them."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from sluice.db.connection import Connection
from sluice.db.documents import Document

_DOC_FIELDS = ", ".join(f"d.{name}" for name in Document.__dataclass_fields__)


def add(conn: Connection, document_id: uuid.UUID, user_ids: Iterable[str], *, org_id: str, shared_by: str) -> None:
    """Make each of ``user_ids`` a recipient; one already there stays as it was."""
    conn.execute(
        """
        INSERT INTO document_recipients (document_id, user_id, org_id, shared_by)
        SELECT %s, u, %s, %s FROM unnest(%s::text[]) AS u
        ON CONFLICT (document_id, user_id) DO NOTHING
        """,
        (document_id, org_id, shared_by, sorted(set(user_ids))),
    )


def copy(conn: Connection, source: uuid.UUID, target: uuid.UUID) -> None:
    """Give ``target`` the recipients of ``source`` (an archive's members are shared as it was)."""
    conn.execute(
        """
        INSERT INTO document_recipients (document_id, user_id, org_id, shared_by)
        SELECT %s, user_id, org_id, shared_by FROM document_recipients WHERE document_id = %s
        ON CONFLICT (document_id, user_id) DO NOTHING
        """,
        (target, source),
    )


def of(conn: Connection, document_id: uuid.UUID) -> list[str]:
    """The recipients of a document, in order."""
    rows = conn.execute(
        "SELECT user_id FROM document_recipients WHERE document_id = %s ORDER BY user_id", (document_id,)
    ).fetchall()
    return [r["user_id"] for r in rows]


def is_recipient(conn: Connection, document_id: uuid.UUID, user_id: str, org_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM document_recipients WHERE document_id = %s AND user_id = %s AND org_id = %s",
        (document_id, user_id, org_id),
    ).fetchone()
    return row is not None


def receives_in(conn: Connection, kb_id: uuid.UUID, user_id: str, org_id: str) -> bool:
    """Whether the user is a recipient of at least one document filed in the base."""
    row = conn.execute(
        """
        SELECT 1 FROM document_recipients r JOIN documents d ON d.id = r.document_id
         WHERE r.user_id = %s AND r.org_id = %s AND d.kb_id = %s
         LIMIT 1
        """,
        (user_id, org_id, kb_id),
    ).fetchone()
    return row is not None


def remove(conn: Connection, document_id: uuid.UUID, user_id: str) -> bool:
    cur = conn.execute("DELETE FROM document_recipients WHERE document_id = %s AND user_id = %s",
                       (document_id, user_id))
    return cur.rowcount > 0


def count(conn: Connection, document_id: uuid.UUID) -> int:
    row = conn.execute("SELECT count(*) AS n FROM document_recipients WHERE document_id = %s",
                       (document_id,)).fetchone()
    assert row is not None
    return int(row["n"])


def shared_with(conn: Connection, user_id: str) -> int:
    """How many documents are shared with the user: they count against the user's private pool."""
    row = conn.execute("SELECT count(*) AS n FROM document_recipients WHERE user_id = %s", (user_id,)).fetchone()
    assert row is not None
    return int(row["n"])


@dataclass
class PoolEntry:
    """One document of a user's private pool: their own (``shared_by`` None) or shared with them."""

    document: Document
    shared_by: str | None


_POOL = """
    FROM documents d
    LEFT JOIN knowledge_bases kb ON kb.id = d.kb_id
    LEFT JOIN document_recipients r
           ON r.document_id = d.id AND r.user_id = %(user)s AND r.org_id = %(org)s::text
   WHERE (kb.scope = 'personal' AND kb.owner_id = %(user)s)
      OR (kb.scope = 'recipients' AND r.user_id IS NOT NULL)
"""


def private_pool(conn: Connection, user_id: str, org_id: str | None, *, limit: int, offset: int
                 ) -> tuple[list[PoolEntry], int]:
    """The user's private pool, newest first: the documents of their personal bases and the ones
    shared with them (only within their present organization), and how many there are in all."""
    params = {"user": user_id, "org": org_id, "limit": limit, "offset": offset}
    rows = conn.execute(
        f"SELECT {_DOC_FIELDS}, r.shared_by AS pool_shared_by {_POOL} "
        "ORDER BY d.created_at DESC, d.id LIMIT %(limit)s OFFSET %(offset)s",
        params,
    ).fetchall()
    total = conn.execute(f"SELECT count(*) AS n {_POOL}", params).fetchone()
    assert total is not None
    entries = []
    for row in rows:
        shared_by = row.pop("pool_shared_by")
        entries.append(PoolEntry(Document(**row), shared_by))
    return entries, int(total["n"])
