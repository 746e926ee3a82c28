"""The upload_quotas and upload_events tables: private-pool upload counts (R-ACC-5)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sluice.db.connection import Connection


def lock_users(conn: Connection, user_ids: Iterable[str]) -> datetime:
    """Take each user's quota row lock, in a fixed order, and answer the database's clock after.

    The lock is held until the transaction ends; the clock is read after it is
    taken, so decisions made under it see time move forward.
    """
    for user_id in sorted(set(user_ids)):
        # An upsert that touches the row locks it whether it was there or not.
        conn.execute(
            "INSERT INTO upload_quotas (user_id) VALUES (%s) "
            "ON CONFLICT (user_id) DO UPDATE SET user_id = EXCLUDED.user_id",
            (user_id,),
        )
    return clock(conn)


def clock(conn: Connection) -> datetime:
    """The database's clock, which every window here is measured by."""
    row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
    assert row is not None
    now: datetime = row["now"]
    return now


def accepted_since(conn: Connection, user_id: str, since: datetime) -> list[datetime]:
    """When the user's uploads after ``since`` were accepted, oldest first."""
    rows = conn.execute(
        "SELECT accepted_at FROM upload_events WHERE user_id = %s AND accepted_at > %s ORDER BY accepted_at",
        (user_id, since),
    ).fetchall()
    return [r["accepted_at"] for r in rows]


def record(conn: Connection, user_id: str, at: datetime, *, keep: timedelta, count: int = 1) -> None:
    """Count ``count`` accepted uploads, and forget the user's uploads older than ``keep``."""
    conn.execute("DELETE FROM upload_events WHERE user_id = %s AND accepted_at <= %s", (user_id, at - keep))
    conn.execute("INSERT INTO upload_events (user_id, accepted_at) SELECT %s, %s FROM generate_series(1, %s)",
                 (user_id, at, count))


def private_pool_documents(conn: Connection, owner_id: str) -> int:
    """The documents in every personal base ``owner_id`` owns, and every document shared with them
    (R-ACC-6): their private pool."""
    row = conn.execute(
        """
        SELECT (SELECT count(*) FROM documents d
                  JOIN knowledge_bases kb ON kb.id = d.kb_id
                 WHERE kb.scope = 'personal' AND kb.owner_id = %(owner)s)
             + (SELECT count(*) FROM document_recipients WHERE user_id = %(owner)s) AS n
        """,
        {"owner": owner_id},
    ).fetchone()
    assert row is not None
    return int(row["n"])
