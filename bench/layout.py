"""The ``layout`` parser against ``pymupdf`` on the corpus PDFs (issue 28, R-PARSE-7).

    nice -n 10 .venv/bin/python bench/layout.py

Every PDF that ``../shared/corpus/real/MANIFEST.tsv`` expects to parse (``parse_text``) is read
both ways in this process, the way the parse child runs ``extract`` (``layout=False`` and
``layout=True``), the first file once untimed first so imports and MuPDF's caches are not counted.
Figures: seconds per page (median over the files, and the total), the markdown headings each
output has (the sections ``chunking_strategy: markdown`` splits at), and, on the PDFs that carry
an outline (bookmarks: the author's own headings), how many outline titles come out as a heading
line. The plain parser has no heading lines by construction; its row says what the markdown
strategy gets from it today.
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import sys
import time
from pathlib import Path

import harness  # noqa: F401  (sets the environment and sys.path first)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "real"

_HEADING_LINE = re.compile(r" {0,3}#{1,6} +(.*)")


def corpus_pdfs(corpus: Path) -> list[Path]:
    with (corpus / "MANIFEST.tsv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return [corpus / r["path"] for r in rows if r["path"].lower().endswith(".pdf") and r["expectation"] == "parse_text"]


def _words(text: str) -> str:
    return " ".join(re.sub(r"[*_`#]", " ", text).lower().split())


def outline_titles(data: bytes) -> list[str]:
    import pymupdf

    with pymupdf.open(stream=data, filetype="pdf") as document:
        return [_words(title) for _level, title, _page in document.get_toc() if _words(title)]


def headings(text: str) -> list[str]:
    from sluice.chunking.markdown import find_sections

    return [_words(text[s.heading[0] : s.heading[1]]) for s in find_sections(text) if s.heading is not None]


def read(data: bytes, name: str, layout: bool) -> tuple[float, int, str]:
    from sluice.config import get_settings
    from sluice.parsing import ParseBudget, extract, sniff

    budget = ParseBudget.from_settings(get_settings())  # the parse stage's own budget
    kind = sniff(data, name)
    started = time.perf_counter()
    document = extract(data, kind, budget, layout=layout)
    return time.perf_counter() - started, len(document.pages or []), document.text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the real corpus (a worktree's ../shared differs)")
    corpus = parser.parse_args().corpus
    if not (corpus / "MANIFEST.tsv").exists():
        print(f"skipped: the real corpus is absent ({corpus}); it lives in ../shared beside the repository")
        return 0
    from harness import print_table

    per_page: dict[bool, list[float]] = {False: [], True: []}
    seconds: dict[bool, float] = {False: 0.0, True: 0.0}
    heading_count: dict[bool, int] = {False: 0, True: 0}
    files_with_headings: dict[bool, int] = {False: 0, True: 0}
    titles = found = 0
    outlined = pages_total = read_files = 0
    failures: list[str] = []
    for path in corpus_pdfs(corpus):
        data = path.read_bytes()
        try:
            if not read_files and not failures:
                for layout in (False, True):
                    read(data, path.name, layout)  # untimed, once: imports and MuPDF's font caches
            results = {layout: read(data, path.name, layout) for layout in (False, True)}
        except Exception as exc:  # a refusal (scan, password) is the same both ways: not a layout figure
            failures.append(f"{path.name}: {type(exc).__name__}")
            continue
        read_files += 1
        print(f"{path.name}: {results[True][0]:.2f} s layout, {results[False][0]:.2f} s pymupdf", file=sys.stderr)
        pages_total += results[False][1]
        for layout, (elapsed, pages, text) in results.items():
            seconds[layout] += elapsed
            per_page[layout].append(elapsed / max(pages, 1))
            found_here = headings(text)
            heading_count[layout] += len(found_here)
            files_with_headings[layout] += bool(found_here)
        toc = outline_titles(data)
        if toc:
            outlined += 1
            layout_headings = headings(results[True][2])
            titles += len(toc)
            found += sum(any(title in h or h in title for h in layout_headings if h) for title in toc)

    def ratio(a: float, b: float) -> str:
        return f"{a / b:,.2f}x" if b else "n/a"

    median = {layout: statistics.median(per_page[layout]) if per_page[layout] else 0.0 for layout in (False, True)}
    rows: list[list[object]] = [
        [
            "seconds per page (median over files)",
            f"{median[True]:.4f}",
            f"{median[False]:.4f}",
            ratio(median[True], median[False]),
        ],
        ["seconds, all files", f"{seconds[True]:.2f}", f"{seconds[False]:.2f}", ratio(seconds[True], seconds[False])],
        ["markdown headings (sections to split at)", heading_count[True], heading_count[False], "n/a"],
        ["files with at least one heading", files_with_headings[True], files_with_headings[False], "n/a"],
        [
            f"outline titles found as headings ({outlined} PDFs with an outline)",
            f"{found} of {titles}",
            f"0 of {titles}",
            "n/a",
        ],
    ]
    print(f"{read_files} corpus PDFs read both ways, {pages_total:,} pages; {len(failures)} refused both ways")
    print_table("layout vs pymupdf (R-PARSE-7)", ["figure", "layout", "pymupdf", "ratio"], rows)
    for failure in failures:
        print(f"  refused: {failure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
