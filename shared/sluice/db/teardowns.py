"""The collection_teardowns table (the reservation of a name and the receipt of its teardown,
R-TD-1) and teardown_documents (the rows a teardown deleted whose objects are still to go).

Also the two questions a teardown asks of the sync tables (``sync_sources`` and
``document_claims``, migration 0006, which runs before the teardown tables of 0007).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from sluice.db.connection import Connection

# How many entries a receipt's history keeps (a teardown failing every hour for days stays readable).
HISTORY_LIMIT = 50


@dataclass
class Teardown:
    id: uuid.UUID
    collection_name: str
    kb_id: uuid.UUID | None
    drop_table: bool
    requested_by: str
    created_at: datetime
    attempts: int
    last_error: str | None
    state: str
    step: str
    failed_step: str | None
    deleted_kb_ids: list[uuid.UUID]
    cleared_kb_ids: list[uuid.UUID]
    bases: list[dict[str, Any]]
    sync_source_ids: list[uuid.UUID]
    documents_removed: int
    chunks_removed: int
    objects_removed: int
    bytes_removed: int
    sync_sources_removed: int
    unfiled_documents_failed: int
    table_dropped: bool | None
    left_over: dict[str, int] | None
    history: list[dict[str, Any]] = field(default_factory=list)
    execution_arn: str | None = None
    updated_at: datetime | None = None
    finished_at: datetime | None = None
    released_at: datetime | None = None

    @property
    def released(self) -> bool:
        return self.released_at is not None

    @property
    def kb_ids(self) -> list[uuid.UUID]:
        """Every base the teardown is about: deleted and cleared."""
        return [*self.deleted_kb_ids, *self.cleared_kb_ids]


_FIELDS = ", ".join(Teardown.__dataclass_fields__)


def insert(conn: Connection, **values: Any) -> Teardown:
    for key in ("bases", "history"):
        if key in values:
            values[key] = Jsonb(values[key])
    cols = ", ".join(values)
    params = ", ".join(f"%({k})s" for k in values)
    row = conn.execute(f"INSERT INTO collection_teardowns ({cols}) VALUES ({params}) RETURNING {_FIELDS}",
                       values).fetchone()
    assert row is not None
    return Teardown(**row)


def get(conn: Connection, teardown_id: uuid.UUID, *, lock: bool = False) -> Teardown | None:
    suffix = " FOR UPDATE" if lock else ""
    row = conn.execute(f"SELECT {_FIELDS} FROM collection_teardowns WHERE id = %s{suffix}",
                       (teardown_id,)).fetchone()
    return Teardown(**row) if row else None


_UPDATABLE = frozenset({
    "state", "step", "failed_step", "last_error", "drop_table", "table_dropped", "left_over", "execution_arn",
    "finished_at", "released_at", "documents_removed", "sync_sources_removed",
})
_COUNTERS = frozenset({
    "chunks_removed", "objects_removed", "bytes_removed", "sync_sources_removed", "unfiled_documents_failed",
    "attempts",
})


def update(conn: Connection, teardown_id: uuid.UUID, *, event: dict[str, Any] | None = None,
           add: dict[str, int] | None = None, **values: Any) -> None:
    """Set ``values``, add ``add`` to counters, append ``event`` to the history; always marks progress."""
    unknown = (set(values) - _UPDATABLE) | (set(add or {}) - _COUNTERS)
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    params: dict[str, Any] = {k: Jsonb(v) if k == "left_over" and v is not None else v for k, v in values.items()}
    sets = [f"{k} = %({k})s" for k in values]
    for k, n in (add or {}).items():
        sets.append(f"{k} = {k} + %(add_{k})s")
        params[f"add_{k}"] = n
    if event is not None:
        # Newest last; past the limit the oldest entry goes.
        sets.append("history = (CASE WHEN jsonb_array_length(history) >= %(limit)s THEN history - 0 "
                    "ELSE history END) || jsonb_build_array(%(event)s::jsonb)")
        params.update(limit=HISTORY_LIMIT, event=Jsonb(event))
    sets.append("updated_at = now()")
    params["id"] = teardown_id
    conn.execute(f"UPDATE collection_teardowns SET {', '.join(sets)} WHERE id = %(id)s", params)


def release(conn: Connection, teardown_id: uuid.UUID, left: dict[str, int], *, event: dict[str, Any]) -> None:
    """Close the receipt and free the name: from now on the teardown's steps change nothing."""
    update(conn, teardown_id, state="done", step="done", left_over=left, event=event)
    conn.execute("UPDATE collection_teardowns SET released_at = now(), finished_at = now() WHERE id = %s",
                 (teardown_id,))


def reservation_blocks_write(conn: Connection, collection: str, kb_id: uuid.UUID) -> bool:
    """Whether a reservation on the name concerns a chunk write for ``kb_id``: it drops the
    table, or it is this base's own teardown. A sibling base's teardown leaves its writes alone."""
    row = conn.execute(
        """
        SELECT 1 FROM collection_teardowns
         WHERE collection_name = %(name)s AND released_at IS NULL
           AND (drop_table OR %(kb)s = ANY(deleted_kb_ids) OR %(kb)s = ANY(cleared_kb_ids))
         LIMIT 1
        """,
        {"name": collection, "kb": kb_id},
    ).fetchone()
    return row is not None


def delete_documents(conn: Connection, teardown_id: uuid.UUID, collection: str, kb_ids: Sequence[uuid.UUID], *,
                     unfiled_orgs: Sequence[str] = (), unfiled_untenanted: bool = False,
                     every_unfiled: bool = False) -> int:
    """Delete the rows of ``kb_ids`` and the unfiled rows under ``collection`` it takes, remembering
    each in teardown_documents for the workflow; returns how many went.

    Unfiled rows (no base files them) are taken by tenant: those of ``unfiled_orgs``, those with
    no organization when ``unfiled_untenanted``, or all of them with ``every_unfiled``.
    """
    row = conn.execute(
        """
        WITH gone AS (
            DELETE FROM documents
             WHERE kb_id = ANY(%(kbs)s)
                OR (kb_id IS NULL AND collection_name = %(name)s
                    AND (%(all)s OR org_id = ANY(%(orgs)s) OR (%(untenanted)s AND org_id IS NULL)))
            RETURNING id, kb_id, vector_document_id, storage_path, source, stage, attempt
        ), kept AS (
            INSERT INTO teardown_documents (teardown_id, document_id, kb_id, vector_document_id, storage_path,
                                            source, stage, attempt)
            SELECT %(td)s, id, kb_id, vector_document_id, storage_path, source, stage, attempt FROM gone
            RETURNING 1
        )
        SELECT count(*) AS n FROM kept
        """,
        {"kbs": list(kb_ids), "name": collection, "all": every_unfiled, "orgs": list(unfiled_orgs),
         "untenanted": unfiled_untenanted, "td": teardown_id},
    ).fetchone()
    assert row is not None
    return int(row["n"])


@dataclass(frozen=True)
class GoneDocument:
    """A deleted row whose stored objects are still to go."""

    document_id: uuid.UUID
    kb_id: uuid.UUID | None
    vector_document_id: uuid.UUID | None
    storage_path: str | None
    source: str | None
    stage: str | None
    attempt: int


def pending_documents(conn: Connection, teardown_id: uuid.UUID, limit: int) -> list[GoneDocument]:
    rows = conn.execute(
        """
        SELECT document_id, kb_id, vector_document_id, storage_path, source, stage, attempt
          FROM teardown_documents WHERE teardown_id = %s ORDER BY document_id LIMIT %s
        """,
        (teardown_id, limit),
    ).fetchall()
    return [GoneDocument(**r) for r in rows]


def count_pending_documents(conn: Connection, teardown_id: uuid.UUID) -> int:
    row = conn.execute("SELECT count(*) AS n FROM teardown_documents WHERE teardown_id = %s",
                       (teardown_id,)).fetchone()
    assert row is not None
    return int(row["n"])


def chunk_document_ids(conn: Connection, teardown_id: uuid.UUID, *, outside: Sequence[uuid.UUID] = ()
                       ) -> list[uuid.UUID]:
    """The ids the chunks of the teardown's deleted rows carry, except rows of the bases ``outside``."""
    rows = conn.execute(
        """
        SELECT coalesce(vector_document_id, document_id) AS id FROM teardown_documents
         WHERE teardown_id = %s AND (kb_id IS NULL OR NOT kb_id = ANY(%s))
        """,
        (teardown_id, list(outside)),
    ).fetchall()
    return [r["id"] for r in rows]


def forget_documents(conn: Connection, teardown_id: uuid.UUID, document_ids: Sequence[uuid.UUID]) -> None:
    conn.execute("DELETE FROM teardown_documents WHERE teardown_id = %s AND document_id = ANY(%s)",
                 (teardown_id, list(document_ids)))


def stalled(conn: Connection, before: datetime) -> list[Teardown]:
    """Reservations with no progress since ``before``, locked; one a step is working on is skipped."""
    rows = conn.execute(
        f"""
        SELECT {_FIELDS} FROM collection_teardowns
         WHERE released_at IS NULL AND updated_at < %s
         ORDER BY updated_at
         FOR UPDATE SKIP LOCKED
        """,
        (before,),
    ).fetchall()
    return [Teardown(**r) for r in rows]


def count_documents(conn: Connection, kb_ids: Sequence[uuid.UUID]) -> int:
    row = conn.execute("SELECT count(*) AS n FROM documents WHERE kb_id = ANY(%s)", (list(kb_ids),)).fetchone()
    assert row is not None
    return int(row["n"])


# --- the sync tables ---------------------------------------------------------------------------

def sync_sources_of(conn: Connection, kb_ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    """The sync sources feeding ``kb_ids``."""
    if not kb_ids:
        return []
    rows = conn.execute("SELECT id FROM sync_sources WHERE kb_id = ANY(%s) ORDER BY id", (list(kb_ids),)).fetchall()
    return [r["id"] for r in rows]


def remove_sync_sources(conn: Connection, source_ids: Sequence[uuid.UUID], kb_ids: Sequence[uuid.UUID]) -> int:
    """Delete the sources (and their claims) named, or feeding ``kb_ids``; returns the sources deleted."""
    params = {"ids": list(source_ids), "kbs": list(kb_ids)}
    conn.execute(
        """
        DELETE FROM document_claims
         WHERE source_id IN (SELECT id FROM sync_sources WHERE id = ANY(%(ids)s) OR kb_id = ANY(%(kbs)s))
        """,
        params,
    )
    return conn.execute("DELETE FROM sync_sources WHERE id = ANY(%(ids)s) OR kb_id = ANY(%(kbs)s)",
                        params).rowcount


def remove_claims_of_documents(conn: Connection, teardown_id: uuid.UUID) -> int:
    """Delete the claims on the documents a teardown deleted (a cleared default keeps its sources)."""
    return conn.execute(
        "DELETE FROM document_claims WHERE document_id IN "
        "(SELECT document_id FROM teardown_documents WHERE teardown_id = %s)",
        (teardown_id,),
    ).rowcount


def count_sync_sources(conn: Connection, source_ids: Sequence[uuid.UUID], kb_ids: Sequence[uuid.UUID]) -> int:
    row = conn.execute("SELECT count(*) AS n FROM sync_sources WHERE id = ANY(%s) OR kb_id = ANY(%s)",
                       (list(source_ids), list(kb_ids))).fetchone()
    assert row is not None
    return int(row["n"])
