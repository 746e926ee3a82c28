"""Applies the versioned SQL files of infra/migrations in order, each once (R-OPS-3)."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg

_TRACKING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


def migrations_dir() -> Path:
    env = os.environ.get("SLUICE_MIGRATIONS_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "infra" / "migrations"
        if candidate.is_dir():
            return candidate
    # Inside the Lambda layer the files are shipped beside the package.
    return here.parent / "sql"


def pending(conn: psycopg.Connection, directory: Path | None = None) -> list[Path]:
    directory = directory or migrations_dir()
    conn.execute(_TRACKING)
    done = {row[0] if isinstance(row, tuple) else row["version"]
            for row in conn.execute("SELECT version FROM schema_migrations").fetchall()}
    return [p for p in sorted(directory.glob("*.sql")) if p.stem not in done]


def migrate(url: str, directory: Path | None = None) -> list[str]:
    """Apply what is missing; returns the versions applied. Safe to run concurrently."""
    applied: list[str] = []
    with psycopg.connect(url) as conn:
        # One migrator at a time: a Lambda and a CLI started together must not race.
        conn.execute("SELECT pg_advisory_lock(727274)")
        try:
            for path in pending(conn, directory):
                with conn.transaction():
                    conn.execute(path.read_text())
                    conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (path.stem,))
                applied.append(path.stem)
        finally:
            conn.execute("SELECT pg_advisory_unlock(727274)")
    return applied
