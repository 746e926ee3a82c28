"""What the benchmark scripts share: the environment they run the package in (set on import,
before the package is), printing a table, and a throwaway embedded PostgreSQL."""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
warnings.filterwarnings("ignore")
sys.path.insert(0, str(ROOT / "shared"))


def print_table(title: str, header: list[str], rows: list[list[object]], number_format: str = "{:,.1f}") -> None:
    cells = [header] + [[number_format.format(c) if isinstance(c, float) else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n{title}")
    for n, r in enumerate(cells):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def migrated_database(url: str | None, dbname: str) -> tuple[str, Any]:
    """``url`` as given, or a new migrated database in a throwaway embedded PostgreSQL (and its server)."""
    if url:
        return url, None
    import pgserver
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from sluice.db.migrations import migrate

    server = pgserver.get_server(Path(tempfile.mkdtemp(prefix=f"sluice-{dbname}-")), cleanup_mode="stop")
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    url = make_conninfo(**{**conninfo_to_dict(admin), "dbname": dbname})
    migrate(url)
    return url, server
