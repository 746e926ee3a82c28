"""One table per collection at 10,000 collections (issue 30): each made by ``vectors.store.ensure_table``
(HNSW, GIN, btree and hash indexes, the text-statistics triggers) with a few chunks, then at checkpoints:
CREATE time per collection, catalog size, planning time of a search's query, ANALYZE of every table, a
migration touching every table (ADD COLUMN + DROP COLUMN), and the server's memory.

    nice -n 10 .venv/bin/python bench/collections_10k.py                     # 10,000 collections
    nice -n 10 .venv/bin/python bench/collections_10k.py --max-minutes 6     # stop creating after 6 minutes

Each collection is made on one long-lived connection (the collections function's environment) and its
chunks are written on another, replaced every ``--writer-every`` collections (an embed environment's
lifetime): a backend's DDL slows with every collection it has *written to* (each table's copy of the
text-statistics trigger function keeps its cached plans, and every relation invalidation walks them),
so one connection doing both measures that backend's history, not a creation. ``--writer-every 0``
writes on the creating connection, as the first 10,000 attempt did.

With --max-minutes the run stops at the last checkpoint reached and says so; the figures per
collection are then extrapolated to 10,000 (each checkpoint's figures show whether they are linear).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

from harness import migrated_database, print_table

CHECKPOINTS = (100, 300, 600, 1000, 2000, 5000, 10000)


def memory_mb(pids: list[int], field: str = "VmRSS") -> float:
    """``field`` of /proc/<pid>/status summed over ``pids``, in MB. VmRSS counts the shared buffers a
    backend has touched; RssAnon is its private memory (the relation and catalog caches among it)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU of ``pid`` so far, or None once it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def autovacuum_idle(url: str, seconds: float) -> dict[str, float]:
    """The autovacuum launcher's and workers' CPU while nothing else runs for ``seconds``: what the
    catalog's size costs in the background when no table has passed a threshold. Workers come and go;
    each one's CPU is the last reading before it left (sampled every 0.2 s, so a worker shorter than
    that is missed, and its last 0.2 s undercounted)."""
    import psycopg

    seen: dict[int, float] = {}
    workers: set[int] = set()
    end = time.perf_counter() + seconds
    with psycopg.connect(url, autocommit=True) as conn:
        first: dict[int, float] = {}
        while time.perf_counter() < end:
            for pid, kind in conn.execute(
                "SELECT pid, backend_type FROM pg_stat_activity WHERE backend_type LIKE 'autovacuum%'"
            ).fetchall():
                used = cpu_seconds(pid)
                if used is None:
                    continue
                first.setdefault(pid, used if kind == "autovacuum launcher" else 0.0)
                seen[pid] = used
                if kind != "autovacuum launcher":
                    workers.add(pid)
            time.sleep(0.2)
    cpu = sum(seen[p] - first[p] for p in seen)
    return {"seconds": seconds, "cpu_seconds": cpu, "workers": len(workers)}


def measure(conn, url: str, n: int) -> list[object]:
    from sluice.vectors.names import table_ident

    row = conn.execute(
        "SELECT count(*) AS rels, pg_size_pretty(sum(pg_total_relation_size(c.oid))) AS size"
        " FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = 'pg_catalog'"
    ).fetchone()
    rels = conn.execute("SELECT count(*) AS n FROM pg_class").fetchone()["n"]
    db = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database())) AS s").fetchone()["s"]
    # A search's candidate query shape on one collection among n: ORDER BY the HNSW expression, with a filter.
    t = table_ident(f"c{n // 2:05d}").as_string(conn)
    vec = "[" + ",".join(["0.05"] * 384) + "]"
    query = (
        f"EXPLAIN (SUMMARY true) SELECT id FROM {t} WHERE kb_id IS NOT NULL"  # noqa: S608
        f" ORDER BY embedding::halfvec(384) <=> '{vec}'::halfvec(384) LIMIT 10"
    )

    def planning(c) -> float:
        text = " ".join(next(iter(r.values())) if isinstance(r, dict) else r[0] for r in c.execute(query).fetchall())
        return float(text.split("Planning Time: ")[1].split(" ms")[0])

    plans = [planning(conn) for _ in range(5)]
    conn.rollback()
    # A new connection's first plan: its backend has no relation cache yet (a Lambda's first search).
    import psycopg

    with psycopg.connect(url) as fresh:
        first_plan = planning(fresh)
    pids = [r["pid"] for r in conn.execute("SELECT pid FROM pg_stat_activity").fetchall()]
    own = conn.execute("SELECT pg_backend_pid() AS p").fetchone()["p"]
    conn.rollback()
    return [
        n, rels, row["size"], db, f"{min(plans):.2f}", f"{sorted(plans)[2]:.2f}", f"{first_plan:.2f}",
        f"{memory_mb(pids):.0f}", f"{memory_mb([own], 'RssAnon'):.0f}", f"{os.getloadavg()[0]:.1f}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collections", type=int, default=10_000)
    parser.add_argument("--max-minutes", type=float, default=0)
    parser.add_argument("--database-url")
    parser.add_argument("--writer-every", type=int, default=100,
                        help="a new connection writes the chunks every this many collections (0: the creating one)")
    parser.add_argument("--idle-seconds", type=float, default=180, help="the autovacuum window after creation")
    parser.add_argument("--out", default=str(Path(__file__).parent / "out" / "collections_10k.json"))
    args = parser.parse_args()

    import psycopg
    from psycopg.rows import dict_row

    from sluice.db.connection import _configure
    from sluice.vectors import store

    url, server = migrated_database(args.database_url, "collections")
    started = time.perf_counter()
    rows, create_rows = [], []
    kb = uuid.uuid4()
    try:
        with psycopg.connect(url, row_factory=dict_row) as conn:
            _configure(conn)
            made, lap, lap_n = 0, time.perf_counter(), 0
            writer, ddl = conn, 0.0
            for n in range(args.collections):
                name = f"c{n:05d}"
                t0 = time.perf_counter()
                store.ensure_table(conn, name, 384)
                conn.commit()
                ddl += time.perf_counter() - t0
                if args.writer_every and n % args.writer_every == 0:
                    if writer is not conn:
                        writer.close()
                    writer = psycopg.connect(url, row_factory=dict_row)
                    _configure(writer)
                doc = uuid.uuid4()
                store.insert_chunks(
                    writer,
                    name,
                    [
                        store.ChunkRow(
                            doc, kb, "org", i, f"collection {n} chunk {i} words", [((n + i) % 7) / 10 + 0.01] * 384
                        )
                        for i in range(3)
                    ],
                )
                writer.commit()
                made = n + 1
                if made in CHECKPOINTS or made == args.collections:
                    per = (time.perf_counter() - lap) / (made - lap_n)
                    create_rows.append(
                        [made, f"{per * 1000:.1f}", f"{ddl * 1000 / (made - lap_n):.1f}", f"{os.getloadavg()[0]:.1f}"]
                    )
                    ddl = 0.0
                    rows.append(measure(conn, url, made))
                    lap, lap_n = time.perf_counter(), made
                    print(f"{made} collections, {time.perf_counter() - started:.0f} s", flush=True)
                    if args.max_minutes and time.perf_counter() - started > args.max_minutes * 60:
                        break
            if writer is not conn:
                writer.close()
            print_table(
                "CREATE (ensure_table + commit, then 3 chunks + commit), ms per collection since the last checkpoint",
                ["collections", "ms each", "of which ensure_table + commit", "load average (1 min)"],
                create_rows,
            )
            print_table(
                "Catalog and planning at each checkpoint (planning: EXPLAIN of a search's ORDER BY, min and "
                "median of 5)",
                [
                    "collections",
                    "pg_class rows",
                    "pg_catalog size",
                    "database size",
                    "plan ms min",
                    "plan ms p50",
                    "first plan, new connection, ms",
                    "backends RSS MB",
                    "this backend private MB",
                    "load average",
                ],
                rows,
            )
            conn.rollback()
            idle = autovacuum_idle(url, args.idle_seconds) if args.idle_seconds else None
            conn.autocommit = True
            t0 = time.perf_counter()
            conn.execute("ANALYZE")
            analyze_s = time.perf_counter() - t0
            tables = [
                r["name"]
                for r in conn.execute(
                    "SELECT relname AS name FROM pg_class WHERE relkind = 'r' AND relname LIKE 'rag\\_c%'"
                ).fetchall()
            ]
            conn.autocommit = False
            results = [["ANALYZE (the whole database)", f"{analyze_s:.1f}", f"{analyze_s * 1000 / len(tables):.2f}"]]
            locks = conn.execute("SHOW max_locks_per_transaction").fetchone()["max_locks_per_transaction"]
            for label, per_txn in (("one transaction", len(tables)), ("500 tables a transaction", 500)):
                t0 = time.perf_counter()
                try:
                    for i, name in enumerate(tables):
                        conn.execute(f'ALTER TABLE "{name}" ADD COLUMN probe_col text')  # noqa: S608
                        conn.execute(f'ALTER TABLE "{name}" DROP COLUMN probe_col')  # noqa: S608
                        if (i + 1) % per_txn == 0:
                            conn.commit()
                    conn.commit()
                    seconds = time.perf_counter() - t0
                    results.append(
                        [
                            f"migration: ADD + DROP COLUMN on every table, {label}",
                            f"{seconds:.1f}",
                            f"{seconds * 1000 / len(tables):.2f}",
                        ]
                    )
                except psycopg.Error as error:
                    conn.rollback()
                    results.append(
                        [
                            f"migration, {label}: FAILED after {time.perf_counter() - t0:.1f} s",
                            str(error).splitlines()[0][:80],
                            f"max_locks_per_transaction {locks}",
                        ]
                    )
            if idle:
                results.append(
                    [
                        f"autovacuum while idle: {idle['workers']} workers in {idle['seconds']:.0f} s, CPU s",
                        f"{idle['cpu_seconds']:.1f}",
                        f"{idle['cpu_seconds'] * 1000 / len(tables):.3f}",
                    ]
                )
            private = memory_mb([conn.execute("SELECT pg_backend_pid() AS p").fetchone()["p"]], "RssAnon")
            conn.rollback()
            results.append(["this backend's private memory after all of it, MB", f"{private:.0f}", ""])
            print_table(f"Every table at {len(tables)} collections", ["operation", "seconds", "ms per table"], results)
            print(f"load average at the end: {os.getloadavg()}")
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(
                json.dumps({"create": create_rows, "checkpoints": rows, "every_table": results, "idle": idle}, indent=1)
            )
            print(f"wrote {args.out}")
    finally:
        if server is not None:
            server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
