"""Applies the versioned SQL files of infra/migrations in order, each once (R-OPS-3), and brings
the ``vector`` extension up to the version the server has installed."""

from __future__ import annotations

from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from sluice.config import AssetSettings, read
from sluice.db.connection import Connection

_TRACKING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


def migrations_dir() -> Path:
    env = read(AssetSettings).migrations_dir
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "infra" / "migrations"
        if candidate.is_dir():
            return candidate
    # Inside the Lambda layer the files are shipped beside the package.
    return here.parent / "sql"


def pending(conn: Connection, directory: Path | None = None) -> list[Path]:
    directory = directory or migrations_dir()
    conn.execute(_TRACKING)
    done = {row["version"] for row in conn.execute("SELECT version FROM schema_migrations").fetchall()}
    return [p for p in sorted(directory.glob("*.sql")) if p.stem not in done]


def migrate(url: str, directory: Path | None = None) -> list[str]:
    """Apply what is missing; returns the versions applied. Safe to run concurrently."""
    applied: list[str] = []
    with psycopg.connect(url, row_factory=dict_row) as conn:
        # One migrator at a time: a Lambda and a CLI started together must not race.
        conn.execute("SELECT pg_advisory_lock(727274)")
        try:
            for path in pending(conn, directory):
                with conn.transaction():
                    conn.execute(path.read_text())
                    conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (path.stem,))
                applied.append(path.stem)
            updated = update_vector_extension(conn)
            if updated:
                applied.append(updated)
        finally:
            conn.execute("SELECT pg_advisory_unlock(727274)")
    return applied


def version_tuple(text: str | None) -> tuple[int, ...]:
    """``"0.8.6"`` as ``(0, 8, 6)``, so versions compare as numbers."""
    return tuple(int(p) for p in str(text or "0").split(".") if p.isdigit())


def update_vector_extension(conn: Connection) -> str | None:
    """``ALTER EXTENSION vector UPDATE`` when the server has a newer pgvector than the database runs.

    A database keeps the extension version it was created with until told otherwise: one made
    before pgvector 0.8 was built into the embedded PostgreSQL (``make install``), or before an
    Aurora engine upgrade, would go on without the iterative index scans search plans for.
    Returns what was done ("vector 0.6.2 -> 0.8.6"), or None.
    """
    row = conn.execute("SELECT installed_version, default_version FROM pg_available_extensions"
                       " WHERE name = 'vector'").fetchone()
    if row is None:
        return None
    installed, available = row["installed_version"], row["default_version"]
    if installed is None or version_tuple(available) <= version_tuple(installed):
        return None
    try:
        with conn.transaction():
            conn.execute("ALTER EXTENSION vector UPDATE")
    except psycopg.errors.InsufficientPrivilege:
        # Only the extension's owner may update it: a migrator that is not must not fail the
        # schema for it. Search keeps the plan the installed version supports.
        return f"vector {installed} (not updated to {available}: the extension's owner must run ALTER EXTENSION)"
    return f"vector {installed} -> {available}"


def vector_version(url: str) -> str | None:
    """The pgvector version the database at ``url`` runs (its extversion), or None without the extension."""
    with psycopg.connect(url, row_factory=dict_row) as conn:
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return None if row is None else str(row["extversion"])
