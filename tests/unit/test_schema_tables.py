"""The tables a collection may never be named after are exactly the ones the migrations create."""

from __future__ import annotations

import re
from pathlib import Path

from sluice.vectors.names import SCHEMA_TABLES

MIGRATIONS = Path(__file__).resolve().parents[2] / "infra" / "migrations"
CREATE_TABLE = re.compile(r"\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?\"?([A-Za-z_][A-Za-z0-9_]*)", re.I)


def test_every_table_the_migrations_create_is_reserved():
    created = {m.group(1).lower() for path in sorted(MIGRATIONS.glob("*.sql"))
               for m in CREATE_TABLE.finditer(path.read_text(encoding="utf-8"))}
    created.add("schema_migrations")  # the migrations runner's own (sluice/db/migrations.py)
    assert len(created) >= 7
    assert created == SCHEMA_TABLES
