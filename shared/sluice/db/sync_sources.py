"""The sync_sources table and its audit trail (sync_audit): what a source is and who changed it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from sluice.db.connection import Connection


@dataclass
class SyncSource:
    id: uuid.UUID
    kb_id: uuid.UUID
    name: str
    connector: str
    config: dict[str, Any]
    secret_id: str | None
    sync_mode: str
    organizational_unit: str | None
    schedule: str | None
    created_by: str
    created_at: datetime | None = None
    updated_at: datetime | None = None
    # The connector's cursor between runs (migration 0021); never shown by the API.
    connector_state: dict[str, Any] = field(default_factory=dict)


_FIELDS = ", ".join(SyncSource.__dataclass_fields__)
# Changing what a source reads, or what its runs do with a change (update_only ignores new files its cursor
# then moves past), makes its connector's cursor meaningless: it starts over.
_FORGETS_STATE = {"kb_id", "config", "secret_id", "sync_mode"}
_UPDATABLE = {"kb_id", "name", "config", "secret_id", "sync_mode", "organizational_unit", "schedule"}


def insert(conn: Connection, source: SyncSource) -> SyncSource:
    values = {k: v for k, v in source.__dict__.items() if k not in ("created_at", "updated_at")}
    values["config"] = Jsonb(values["config"])
    values["connector_state"] = Jsonb(values["connector_state"])
    cols = ", ".join(values)
    params = ", ".join(f"%({k})s" for k in values)
    row = conn.execute(f"INSERT INTO sync_sources ({cols}) VALUES ({params}) RETURNING {_FIELDS}", values).fetchone()
    assert row is not None
    return SyncSource(**row)


def get(conn: Connection, source_id: uuid.UUID, *, for_update: bool = False) -> SyncSource | None:
    suffix = " FOR UPDATE" if for_update else ""
    row = conn.execute(f"SELECT {_FIELDS} FROM sync_sources WHERE id = %s{suffix}", (source_id,)).fetchone()
    return SyncSource(**row) if row else None


def list_for_kb(conn: Connection, kb_id: uuid.UUID) -> list[SyncSource]:
    rows = conn.execute(f"SELECT {_FIELDS} FROM sync_sources WHERE kb_id = %s ORDER BY created_at, id",
                        (kb_id,)).fetchall()
    return [SyncSource(**r) for r in rows]


def lock_kb_sources(conn: Connection, kb_id: uuid.UUID) -> int:
    """Hold the base's sources still until the transaction ends (two adds queue), and count them."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('sync_sources:' || %s::text, 0))", (kb_id,))
    row = conn.execute("SELECT count(*) AS n FROM sync_sources WHERE kb_id = %s", (kb_id,)).fetchone()
    assert row is not None
    return int(row["n"])


@dataclass(frozen=True)
class Scheduled:
    """A scheduled source, whose base it feeds, and when its latest run was written (and whether it goes)."""

    source: SyncSource
    scope: str
    org_id: str | None
    owner_id: str | None
    last_run_at: datetime | None
    running: bool


def scheduled(conn: Connection) -> list[Scheduled]:
    """Every scheduled source with what deciding "due" needs, in one query (the latest run by index)."""
    fields = ", ".join(f"s.{f}" for f in SyncSource.__dataclass_fields__)
    rows = conn.execute(
        f"""
        SELECT {fields}, kb.scope AS kb_scope, kb.org_id AS kb_org_id, kb.owner_id AS kb_owner_id,
               l.created_at AS last_run_at, coalesce(l.status IN ('queued', 'running'), false) AS running
          FROM sync_sources s
          JOIN knowledge_bases kb ON kb.id = s.kb_id
          LEFT JOIN LATERAL (SELECT created_at, status FROM sync_logs
                              WHERE source_id = s.id ORDER BY created_at DESC, id LIMIT 1) l ON true
         WHERE s.schedule IS NOT NULL
         ORDER BY s.id
        """
    ).fetchall()
    return [Scheduled(SyncSource(**{k: r[k] for k in SyncSource.__dataclass_fields__}), r["kb_scope"],
                      r["kb_org_id"], r["kb_owner_id"], r["last_run_at"], r["running"]) for r in rows]


def update(conn: Connection, source_id: uuid.UUID, changes: dict[str, Any]) -> SyncSource:
    unknown = set(changes) - _UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    values = {k: Jsonb(v) if k == "config" else v for k, v in changes.items()}
    forget = ["connector_state = '{}'::jsonb"] if _FORGETS_STATE & set(changes) else []
    sets = ", ".join([f"{k} = %({k})s" for k in values] + forget + ["updated_at = now()"])
    row = conn.execute(f"UPDATE sync_sources SET {sets} WHERE id = %(source_id)s RETURNING {_FIELDS}",
                       {**values, "source_id": source_id}).fetchone()
    assert row is not None
    return SyncSource(**row)


def keep_connector_state(conn: Connection, source_id: uuid.UUID, state: dict[str, Any]) -> None:
    """The cursor the source's connector starts its next run from."""
    conn.execute("UPDATE sync_sources SET connector_state = %s WHERE id = %s", (Jsonb(state), source_id))


def delete(conn: Connection, source_id: uuid.UUID) -> bool:
    return conn.execute("DELETE FROM sync_sources WHERE id = %s", (source_id,)).rowcount > 0


# --- audit (R-SYNC-5) ----------------------------------------------------------------------------

@dataclass
class AuditEntry:
    action: str
    source_id: uuid.UUID
    actor: str
    connector: str
    kb_id: uuid.UUID | None
    collection_name: str | None
    secret_id: str | None
    previous_kb_id: uuid.UUID | None = None
    previous_collection_name: str | None = None
    cloned_from: uuid.UUID | None = None
    created_at: datetime | None = None


_AUDIT_FIELDS = ", ".join(AuditEntry.__dataclass_fields__)


def audit(conn: Connection, entry: AuditEntry) -> None:
    values = {k: v for k, v in entry.__dict__.items() if k != "created_at"}
    cols = ", ".join(values)
    params = ", ".join(f"%({k})s" for k in values)
    conn.execute(f"INSERT INTO sync_audit ({cols}) VALUES ({params})", values)


def audit_trail(conn: Connection, source_id: uuid.UUID) -> list[AuditEntry]:
    rows = conn.execute(f"SELECT {_AUDIT_FIELDS} FROM sync_audit WHERE source_id = %s ORDER BY id",
                        (source_id,)).fetchall()
    return [AuditEntry(**r) for r in rows]
