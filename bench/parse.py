"""Parsing throughput and memory on the real corpus, against markitdown (issue 3).

    .venv/bin/python bench/parse.py

Every ``parse_text`` file of ``../shared/corpus/real/MANIFEST.tsv`` is read by Sluice
(``sniff`` + ``extract``, in process, the way the parse child runs it) and by Microsoft's
markitdown (``MarkItDown().convert``), format by format. Each (tool, format) pair runs in
a fresh worker process, so its peak RSS is that pair's own; each worker converts one file
untimed first, so library import time is not counted. Figures per format: documents/s,
MB/s (input bytes), peak RSS, and how many files each could read (and, of those with an
``expect:"…"`` snippet in the manifest, how many contained it).

Last, the largest file is parsed the way the service does it (``extract_isolated``: a
child process with the 512 MiB budget's neighbour limits) and the child's peak RSS is
reported; it must stay under 512 MiB, the Lambda size we plan for.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import subprocess
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "real"
LAMBDA_MIB = 512
warnings.filterwarnings("ignore")
sys.path.insert(0, str(ROOT / "shared"))

FORMATS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".docm": "docx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".xls": "xls",
    ".pptx": "pptx",
    ".pptm": "pptx",
    ".odt": "odt",
    ".ods": "ods",
    ".odp": "odp",
    ".msg": "msg",
    ".html": "html",
    ".xml": "xml",
    ".xlf": "xml",
    ".json": "json",
    ".csv": "csv",
    ".txt": "text",
    ".md": "text",
    ".zip": "archive",
    ".tgz": "archive",
    ".tar.gz": "archive",
}


def extension(path: str) -> str:
    return ".tar.gz" if path.endswith(".tar.gz") else os.path.splitext(path)[1].lower()


def corpus_rows() -> list[dict[str, str]]:
    with (CORPUS / "MANIFEST.tsv").open(newline="", encoding="utf-8") as handle:
        return [row for row in csv.DictReader(handle, delimiter="\t") if row["expectation"] == "parse_text"]


def snippet(notes: str) -> str | None:
    match = re.search(r'expect:"([^"]*)"', notes or "")
    return match.group(1) if match else None


# --- worker: one tool, one format, a fresh process -------------------------------------------------


def sluice_reader():
    from sluice.config import get_settings
    from sluice.errors import DocumentRefused
    from sluice.parsing import ParseBudget, extract, isolation, sniff

    isolation._skip_optional_imports()  # as the parse child does

    budget = ParseBudget.from_settings(get_settings())  # the parse stage's own budget

    def read(path: Path) -> str | None:
        data = path.read_bytes()
        try:
            return extract(data, sniff(data, path.name), budget).text
        except DocumentRefused:
            return None

    return read


def markitdown_reader():
    import logging

    from markitdown import MarkItDown

    logging.disable(logging.CRITICAL)
    converter = MarkItDown(enable_plugins=False)

    def read(path: Path) -> str | None:
        try:
            return converter.convert(str(path)).text_content or ""
        except Exception:  # markitdown raises many kinds; a failure is "not readable"
            return None

    return read


def worker(tool: str, paths: list[str], snippets: list[str]) -> None:
    read = sluice_reader() if tool == "sluice" else markitdown_reader()
    files = [CORPUS / p for p in paths]
    read(files[0])  # imports and first-use costs are not throughput
    seconds = 0.0
    readable = 0
    found = 0
    for path, expected in zip(files, snippets, strict=True):
        started = time.perf_counter()
        text = read(path)
        seconds += time.perf_counter() - started
        if text is not None:
            readable += 1
            if expected and expected in text:
                found += 1
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": seconds,
                "readable": readable,
                "found": found,
                "files": len(files),
                "with_snippet": sum(1 for s in snippets if s),
                "bytes": sum(f.stat().st_size for f in files),
                "peak_mib": peak_kib / 1024,
            }
        )
    )


def largest_isolated(path: Path) -> None:
    """Peak RSS of the parse child on the largest file, the way the parse stage runs it.
    Run in a fresh worker: RUSAGE_CHILDREN is the high-water mark of every child so far."""
    from sluice.config import get_settings
    from sluice.parsing import ParseBudget, extract_isolated, sniff

    budget = ParseBudget.from_settings(get_settings())  # the parse stage's own budget
    data = path.read_bytes()
    started = time.perf_counter()
    document = extract_isolated(data, sniff(data, path.name), budget)
    seconds = time.perf_counter() - started
    child_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"seconds": seconds, "child_peak_mib": child_kib / 1024, "chars": len(document.text)}))


# --- driver ------------------------------------------------------------------------------------------


def run_worker(tool: str, rows: list[dict[str, str]]) -> dict[str, float]:
    args = [sys.executable, __file__, "--worker", tool, "--files", json.dumps([r["path"] for r in rows])]
    args += ["--snippets", json.dumps([snippet(r["notes"]) or "" for r in rows])]
    done = subprocess.run(args, capture_output=True, text=True, timeout=1800, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"seconds": 0.0, "readable": 0, "found": 0, "files": len(rows), "bytes": 0, "peak_mib": 0.0,
                "with_snippet": 0, "crashed": 1}  # fmt: skip
    return json.loads(lines[-1])


def ratio(ours: float, theirs: float, higher_is_better: bool = True) -> str:
    if not ours or not theirs:
        return "–"
    value = ours / theirs if higher_is_better else theirs / ours
    return f"{value:,.1f}x"


def table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def main() -> None:
    groups: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in corpus_rows():
        groups[FORMATS.get(extension(row["path"]), "other")].append(row)
    rows: list[list[str]] = []
    totals = {tool: defaultdict(float) for tool in ("sluice", "markitdown")}
    for fmt in sorted(groups):
        files = groups[fmt]
        result = {tool: run_worker(tool, files) for tool in ("sluice", "markitdown")}
        for tool, figures in result.items():
            for key in ("seconds", "readable", "found", "files", "bytes", "with_snippet"):
                totals[tool][key] += figures.get(key, 0)
            totals[tool]["peak_mib"] = max(totals[tool]["peak_mib"], figures.get("peak_mib", 0))
        rows.extend(figure_rows(fmt, result["sluice"], result["markitdown"]))
    rows.extend(figure_rows("all", totals["sluice"], totals["markitdown"]))
    print(f"Corpus: {sum(len(g) for g in groups.values())} parse_text files of {CORPUS}")
    print("ratio: sluice ÷ markitdown for throughput, markitdown ÷ sluice for memory (>1 = Sluice better)\n")
    table(["format", "figure", "sluice", "markitdown", "ratio"], rows)

    largest = max((CORPUS / r["path"] for group in groups.values() for r in group), key=lambda p: p.stat().st_size)
    done = subprocess.run(
        [sys.executable, __file__, "--largest", str(largest)], capture_output=True, text=True, timeout=600, check=True
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    verdict = "under" if figures["child_peak_mib"] < LAMBDA_MIB else "OVER"
    print(
        f"\nLargest file: {largest.relative_to(CORPUS)} ({largest.stat().st_size / 1e6:.1f} MB): "
        f"extract_isolated {figures['seconds']:.2f} s, parse child peak RSS {figures['child_peak_mib']:.0f} MiB "
        f"({verdict} the {LAMBDA_MIB} MiB Lambda)"
    )


def figure_rows(fmt: str, ours: dict, theirs: dict) -> list[list[str]]:
    def per_second(figures: dict, key: str) -> float:
        return (figures.get(key, 0) / figures["seconds"]) if figures.get("seconds") else 0.0

    docs_ours = per_second(ours, "files")
    docs_theirs = per_second(theirs, "files")
    mb_ours = per_second(ours, "bytes") / 1e6
    mb_theirs = per_second(theirs, "bytes") / 1e6
    files = int(ours.get("files", 0))
    snippets = int(ours.get("with_snippet", 0))
    rows = [
        [fmt, "documents/s", f"{docs_ours:,.1f}", f"{docs_theirs:,.1f}", ratio(docs_ours, docs_theirs)],
        [fmt, "MB/s", f"{mb_ours:,.2f}", f"{mb_theirs:,.2f}", ratio(mb_ours, mb_theirs)],
        [fmt, "peak RSS MiB", f"{ours.get('peak_mib', 0):,.0f}", f"{theirs.get('peak_mib', 0):,.0f}",
         ratio(ours.get("peak_mib", 0), theirs.get("peak_mib", 0), higher_is_better=False)],  # fmt: skip
        [fmt, "files readable", f"{int(ours.get('readable', 0))}/{files}",
         f"{int(theirs.get('readable', 0))}/{files}", ""],  # fmt: skip
    ]
    if snippets:
        rows.append([fmt, "expected snippet found", f"{int(ours.get('found', 0))}/{snippets}",
                     f"{int(theirs.get('found', 0))}/{snippets}", ""])  # fmt: skip
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", choices=["sluice", "markitdown"])
    parser.add_argument("--files")
    parser.add_argument("--snippets")
    parser.add_argument("--largest")
    options = parser.parse_args()
    if options.largest:
        largest_isolated(Path(options.largest))
    elif options.worker:
        worker(options.worker, json.loads(options.files), json.loads(options.snippets))
    else:
        main()
