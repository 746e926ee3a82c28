"""OCR pages recognised per tenant per UTC day (issue 37 item 7): what ``sluice.admission`` reads
against the operator's OCR_PAGES_PER_TENANT_PER_DAY."""

from __future__ import annotations

from sluice.db.connection import Connection

# Days kept: today's row is the one read; older ones only show recent spend.
KEEP_DAYS = 7


def pages_today(conn: Connection, tenant: str) -> int:
    row = conn.execute(
        "SELECT pages FROM ocr_usage WHERE tenant = %s AND day = (now() AT TIME ZONE 'UTC')::date", (tenant,)
    ).fetchone()
    return int(row["pages"]) if row else 0


def add(conn: Connection, tenant: str, pages: int) -> None:
    """Count ``pages`` for today (one upsert: concurrent documents add up), and forget old days."""
    conn.execute(
        "INSERT INTO ocr_usage (tenant, day, pages) VALUES (%s, (now() AT TIME ZONE 'UTC')::date, %s) "
        "ON CONFLICT (tenant, day) DO UPDATE SET pages = ocr_usage.pages + EXCLUDED.pages",
        (tenant, pages),
    )
    conn.execute("DELETE FROM ocr_usage WHERE tenant = %s AND day < (now() AT TIME ZONE 'UTC')::date - %s",
                 (tenant, KEEP_DAYS))
