"""Exact identifiers in a collection of real mixed documents (issue 40, R-SRCH-10).

    .venv/bin/python bench/identifiers.py            # a few minutes (parsing and encoding)

The files of ../shared/corpus/real that MANIFEST.tsv says parse to text (each read by the service's own
isolated parser, split as the pipeline splits, embedded by the bundled model), plus 100 planted notes
of five shapes - a hex code, an order number, an error code, a part number, a ticket - each inside a
paragraph of office boilerplate. Each query is "<a few words> <identifier>" and asks for its note.
Every query's pool (the service's own ``find_candidates``, 8 a side as the defaults) is ordered twice:
by ``sluice.search.ranking.rank`` as shipped, and by the min-max fusion it replaced (the pool's own
minimum and maximum). The table counts notes ranked first, in 'simple' and in 'english', at the default
alpha and at 0.9. Without ../shared the real files are left out and said so.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "real"
sys.path.insert(0, str(ROOT))

from harness import exported, migrated_database, print_table, serving  # noqa: E402

BOILERPLATE = [
    "Quarterly revenue recognition follows the group policy; invoices above the threshold need a second "
    "approver, and purchase orders are matched against goods receipts before payment runs on Thursdays.",
    "Server maintenance windows are on Sunday nights; change requests go to the advisory board by Wednesday "
    "with a rollback plan, and incidents are logged with a severity, an owner and a customer impact statement.",
    "Expense claims are submitted through the finance portal with itemised receipts attached; claims older "
    "than ninety days are not reimbursed, and client entertainment needs the written approval of a director.",
    "Annual appraisals open in October: objectives are agreed with the line manager, calibration panels meet "
    "in November and salary letters are issued in January together with the revised bonus scheme.",
]


def planted(n: int = 100) -> list[tuple[str, str, str]]:
    """(filename, text, query): n notes, the five shapes in turn."""
    out = []
    for i in range(n):
        shape = i % 5
        if shape == 0:
            code = f"zq{(i * 2654435761) % 16**10:010x}"
            sentence, query = f"The reference code for ledger {i} is {code}.", f"reference code {code}"
        elif shape == 1:
            code = f"ORD-2026-{10000 + i * 37:05d}"
            sentence, query = f"Order {code} was shipped to the Rotterdam warehouse.", f"where is order {code}"
        elif shape == 2:
            code = f"E{11000 + i * 13}"
            sentence, query = f"The nightly import stopped with error code {code}.", f"import failed {code}"
        elif shape == 3:
            code = f"{4000 + i * 7}-B"
            sentence, query = f"Replace the gasket with part SKU {code} when the seal leaks.", f"gasket part SKU {code}"
        else:
            code = f"INC-{80000 + i * 11}"
            sentence, query = f"Escalation ticket {code} is owned by the platform team.", f"who owns ticket {code}"
        out.append((f"note-{i:03d}.txt", f"{sentence} {BOILERPLATE[i % 4]}\n\n{BOILERPLATE[(i + 1) % 4]}", query))
    return out


def real_texts() -> list[tuple[str, str]]:
    """(filename, text) of the real files that parse to text, read as the pipeline reads them."""
    if not (CORPUS / "MANIFEST.tsv").is_file():
        return []
    from sluice.config import ParsingSettings
    from sluice.errors import DocumentRefused
    from sluice.parsing import extract_isolated, sniff
    from sluice.parsing.budget import ParseBudget

    budget = ParseBudget.from_settings(ParsingSettings())
    out = []
    with (CORPUS / "MANIFEST.tsv").open() as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["expectation"] != "parse_text":
                continue
            data = (CORPUS / row["path"]).read_bytes()
            try:
                doc = extract_isolated(data, sniff(data, row["path"]), budget)
            except DocumentRefused:
                continue
            if doc.text.strip():
                out.append((row["path"], doc.text))
    return out


def minmax_rank(found: list, *, alpha: float, top_k: int) -> list:
    """The fusion this one replaced: each score min-max within the collection's pool, the same gates."""
    from sluice.search.ranking import passes_gates

    def scaled(values: list[float]) -> list[float]:
        low, high = min(values), max(values)
        return [(v - low) / (high - low) if high > low else (1.0 if v > 0 else 0.0) for v in values]

    vec, lex = scaled([c.vec_score for c in found]), scaled([c.text_score for c in found])
    fused = {id(c): alpha * v + (1 - alpha) * t for c, v, t in zip(found, vec, lex, strict=True)}
    order = sorted(found, key=lambda c: (fused[id(c)], c.strong_match, c.vec_score), reverse=True)
    return [c for c in order if passes_gates(c)][:top_k]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--notes", type=int, default=100)
    args = parser.parse_args()

    import psycopg
    from pgvector.psycopg import register_vector

    from sluice.chunking.config import ChunkingPlan
    from sluice.chunking.splitting import split_text
    from sluice.embedding import EmbeddingSpec, find_model
    from sluice.embedding.catalog import vec_gate
    from sluice.embedding.local import LocalEmbedder
    from sluice.search.ranking import ALPHA, rank
    from sluice.vectors import store
    from sluice.vectors.search import BaseScope, find_candidates

    real = real_texts()
    notes = planted(args.notes)
    print(f"{len(real)} real files that parse to text"
          + ("" if real else " (../shared/corpus/real is absent: notes and boilerplate only)"), flush=True)
    plan = ChunkingPlan("recursive", 1000, 100)
    chunks = [(name, c.content, c.index) for name, text in [*real, *((n, t) for n, t, _ in notes)]
              for c in split_text(text, plan)]
    url, server = migrated_database(args.database_url, "bench_identifiers")
    rows: list[list[object]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="sluice-bench-models-") as models, \
                psycopg.connect(url, row_factory=psycopg.rows.dict_row) as conn:
            register_vector(conn)
            encoder = exported("fp32", Path(models))
            with serving(encoder):
                embedder = LocalEmbedder(EmbeddingSpec("local", "all-MiniLM-L6-v2", 384),
                                         find_model("local", "all-MiniLM-L6-v2"), model=encoder)
                vectors = embedder.embed_documents([text for _, text, _ in chunks])
                query_vecs = [embedder.embed_query(q) for _, _, q in notes]
                gate = vec_gate("local", "all-MiniLM-L6-v2")
                for language in ("simple", "english"):
                    collection, kb = f"bench_ids_{language}", uuid.uuid4()
                    store.drop_table(conn, collection)
                    store.ensure_table(conn, collection, 384, language=language)
                    store.insert_chunks(conn, collection, [
                        store.ChunkRow(document_id=uuid.uuid5(uuid.NAMESPACE_URL, name), kb_id=kb, org_id=None,
                                       chunk_index=index, content=text, embedding=vec, filename=name)
                        for (name, text, index), vec in zip(chunks, vectors, strict=True)])
                    conn.commit()
                    for alpha in (ALPHA, 0.9):
                        now = before = 0
                        for (name, _, query), qv in zip(notes, query_vecs, strict=True):
                            found, _ = find_candidates(conn, collection, vector=qv, text=query,
                                                       scope=[BaseScope(kb, None)], limit=8)
                            conn.rollback()
                            for c in found:
                                c.vec_gate = gate
                            top = rank(list(found), top_k=1, alpha=alpha)
                            old = minmax_rank(list(found), alpha=alpha, top_k=1)
                            now += bool(top) and top[0].filename == name
                            before += bool(old) and old[0].filename == name
                        rows.append([f"notes first, {language}, alpha {alpha}", f"{now} of {len(notes)}",
                                     f"{before} of {len(notes)}", f"{now / max(before, 1):.2f}"])
    finally:
        if server is not None:
            server.cleanup()
    print_table(f"Exact identifiers among {len(real)} real files and {len(notes)} planted notes "
                f"({len(chunks)} chunks)", ["figure", "Sluice (bounds of the query)", "min-max in the pool",
                                             "ratio"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
