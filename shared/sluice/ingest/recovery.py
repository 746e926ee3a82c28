"""Documents the pipeline lost track of: the rows still ``processing`` when their messages and
stage artifacts are gone, which nothing would ever move again (the seeds' first incident)."""

from __future__ import annotations

from sluice.db.connection import Connection

LOCAL_RESET = ("The local runtime restarted while this document was being indexed, and its local object "
               "store (kept in memory) started empty; upload the document again.")


def fail_in_flight(conn: Connection, reason: str) -> int:
    """Mark every document still processing ``error`` with ``reason``; returns how many.

    For a store that starts empty (the local runtime after a restart): its queued
    messages and stage artifacts are gone, so no stage will ever claim these rows.
    """
    cur = conn.execute(
        "UPDATE documents SET status = 'error', error_message = %s, last_failure = NULL, completed_at = now(), "
        "updated_at = now() WHERE status = 'processing'",
        (reason,),
    )
    return cur.rowcount


def stored_originals(conn: Connection) -> int:
    """How many documents name a stored original (after a local restart, none of them is there)."""
    row = conn.execute("SELECT count(*) AS n FROM documents WHERE storage_path IS NOT NULL").fetchone()
    return int(row["n"]) if row else 0
