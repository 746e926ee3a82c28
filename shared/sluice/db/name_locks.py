"""The lock on a collection name (R-TD-3), held until the transaction that takes it ends.

A chunk write holds it shared: any number of writes run on a name at once. A
claim (a create on the name) and a teardown's request take it exclusively, so
each finds every write already running on the name committed, and no write
starts while it decides. A claim waits briefly and then gives up (the caller
answers 409 with a retry hint), because each waiting request holds a database
connection; a delete waits longer, for the write to finish.

Whoever takes it together with a base's row lock takes it first, so that a
write and a delete never hold one each while waiting for the other.
"""

from __future__ import annotations

import psycopg

from sluice.db.connection import Connection

_KEY = "SELECT hashtext('collection:' || %s)"


def hold_for_write(conn: Connection, collection: str) -> None:
    """Hold the name shared until the transaction ends; waits while a claim or a teardown decides."""
    conn.execute(f"SELECT pg_advisory_xact_lock_shared(({_KEY}))", (collection,))


def take(conn: Connection, collection: str, *, wait_seconds: float) -> bool:
    """Hold the name exclusively until the transaction ends; False when it stayed busy ``wait_seconds``.

    The wait is bounded with ``lock_timeout`` inside a savepoint, so a timeout leaves the
    caller's transaction usable; the setting is restored once the lock is held.
    """
    timeout = f"{max(1, int(wait_seconds * 1000))}ms"
    # The caller's transaction must be open first: on an idle connection ``conn.transaction()``
    # would be that transaction itself, and its commit would let the lock go at once.
    conn.execute("SELECT 1")
    try:
        with conn.transaction():
            previous = conn.execute("SELECT current_setting('lock_timeout') AS v").fetchone()
            conn.execute("SELECT set_config('lock_timeout', %s, true)", (timeout,))
            conn.execute(f"SELECT pg_advisory_xact_lock(({_KEY}))", (collection,))
            conn.execute("SELECT set_config('lock_timeout', %s, true)", (previous["v"] if previous else "0",))
    except psycopg.errors.LockNotAvailable:
        return False
    return True
