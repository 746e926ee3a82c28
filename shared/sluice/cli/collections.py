"""``sluice collections``: every collection's runtime vector table, with the bases holding its name,
its chunk count and whether a teardown has it reserved (R-OPS-2).

A table is listed by ``sluice.vectors.names.is_runtime_table``: ``rag_`` and a usable collection
name, and not a table the migrations create — the tables migrations leave alone, no more (a
``rag_`` table the schema owns is never reported as a collection).
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("collections", help="list the collections' vector tables, their bases and chunks")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def collections() -> list[dict[str, Any]]:
    from sluice.db import knowledge_bases as kb_repo
    from sluice.db.connection import transaction
    from sluice.vectors import store

    out = []
    with transaction() as conn:
        for name in store.runtime_tables(conn):
            holders = kb_repo.by_collection(conn, name)
            out.append({
                "name": name,
                "table": f"rag_{name}",
                "chunks": store.count_chunks(conn, name),
                "knowledge_bases": [{"id": str(b.id), "scope": b.scope, "org_id": b.org_id,
                                     "is_default": b.is_default} for b in holders],
                "reserved": kb_repo.teardown_reserved(conn, name),
            })
    return out


def run(args: argparse.Namespace) -> int:
    found = collections()
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    head = ["collection", "chunks", "bases", "reserved"]
    lines = [[c["name"], f"{c['chunks']:,}",
              ", ".join(f"{b['id']} ({b['scope']}{', default' if b['is_default'] else ''})"
                        for b in c["knowledge_bases"]) or "none (unfiled: sluice drop NAME removes it)",
              "yes - a teardown is running" if c["reserved"] else ""] for c in found]
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip())
    for line in lines:
        print("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())
    print(f"{len(found)} collection table(s)")
    return 0
