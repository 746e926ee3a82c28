"""A run's listing journal (migration 0023): what each list step did, replayed by the next."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Jsonb

from sluice.db.connection import Connection


def append(conn: Connection, run_id: uuid.UUID, entries: Sequence[dict[str, Any]]) -> None:
    if entries:
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO sync_list_journal (run_id, entry) VALUES (%s, %s)",
                            [(run_id, Jsonb(e)) for e in entries])


def read(conn: Connection, run_id: uuid.UUID) -> list[dict[str, Any]]:
    rows = conn.execute("SELECT entry FROM sync_list_journal WHERE run_id = %s ORDER BY seq", (run_id,)).fetchall()
    return [dict(r["entry"]) for r in rows]


def clear(conn: Connection, run_id: uuid.UUID) -> None:
    conn.execute("DELETE FROM sync_list_journal WHERE run_id = %s", (run_id,))
