"""OCR accuracy, throughput and memory on scanned pages made from known text (issue 28, R-PARSE-7).

    nice -n 10 .venv/bin/python bench/ocr.py [--pages 6]

Pages of known text are typeset, rasterised at 150 and 300 dpi (with and without 0.5 % of pixels
flipped as noise) and put back as image-only PDFs (tests/ocr_samples.py). Each set is read the
way the service reads it (``extract_isolated`` with ``ocr: auto``: the guarded parse child, Tesseract
through PyMuPDF), in a fresh worker process so the child's peak RSS and CPU time are that run's own.
The comparison reads the same page images (each page rendered at 300 dpi, what the service hands
its engine) with the ``tesseract`` command line, one process per page. Figures: character error
rate against the source text (Levenshtein distance over the source's length, whitespace collapsed),
pages per CPU-second (pages/s per core), and peak RSS.

Last, ``auto`` against ``off`` on a born-digital PDF: the per-page check must cost under 5 %.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "shared"), str(ROOT)]

from tests.ocr_samples import born_digital_pdf, page_lines, scanned_pdf  # noqa: E402

SETS = [(150, 0.0), (300, 0.0), (150, 0.005), (300, 0.005)]


def normalised(text: str) -> str:
    return " ".join(text.split())


def distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def cer(recognised: list[str], source: list[str]) -> float:
    errors = sum(distance(normalised(r), normalised(s)) for r, s in zip(recognised, source, strict=True))
    return errors / sum(len(normalised(s)) for s in source)


def sources(pages: int) -> list[list[str]]:
    return [page_lines(i, lines=8) for i in range(pages)]


def children() -> tuple[float, int]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def bench_budget() -> object:
    """Room enough that only the recognition is measured: the parse child's limits, widened."""
    from sluice.parsing.budget import ParseBudget

    return ParseBudget(
        max_chars=5_000_000,
        pdf_max_pages=2000,
        sheet_max_cells=1_000_000,
        archive_max_entries=5000,
        archive_max_bytes=1 << 28,
        archive_max_ratio=100,
        archive_max_member_bytes=1 << 26,
        timeout_seconds=600,
        memory_mb=1536,
    )


def worker(dpi: int, noise: float, pages: int) -> dict[str, float]:
    """One set through the service's path, in this fresh process."""
    from sluice.parsing import extract_isolated, sniff
    from sluice.parsing.ocr import TesseractEngine
    from sluice.parsing.options import ParserOptions

    data = scanned_pdf(sources(pages), dpi=dpi, noise=noise)
    budget = bench_budget()
    started = time.perf_counter()
    document = extract_isolated(
        data, sniff(data, "scan.pdf"), budget, None, ParserOptions(ocr="auto"), TesseractEngine()
    )
    wall = time.perf_counter() - started
    cpu, rss = children()
    assert document.pages is not None
    texts = [document.text[p.start : p.end] for p in document.pages]
    return {
        "cer": cer(texts, ["\n".join(s) for s in sources(pages)]),
        "wall": wall,
        "cpu": cpu,
        "rss_mib": rss / 1024,
        "ocr_pages": float(document.ocr_pages or 0),
    }


def command_line(dpi: int, noise: float, pages: int) -> dict[str, float]:
    """The same page images through the ``tesseract`` program, one process a page."""
    import pymupdf

    from sluice.parsing.ocr import render_page

    data = scanned_pdf(sources(pages), dpi=dpi, noise=noise)
    texts: list[str] = []
    cpu_before, _ = children()
    started = time.perf_counter()
    with pymupdf.open("pdf", data) as document, tempfile.TemporaryDirectory() as folder:
        for page in document:
            image = Path(folder) / f"{page.number}.png"
            image.write_bytes(render_page(page, 300).png)
            out = subprocess.run(
                ["tesseract", str(image), "stdout", "-l", "eng"], capture_output=True, text=True, check=True
            )
            texts.append(out.stdout)
    wall = time.perf_counter() - started
    cpu_after, rss = children()
    return {
        "cer": cer(texts, ["\n".join(s) for s in sources(pages)]),
        "wall": wall,
        "cpu": cpu_after - cpu_before,
        "rss_mib": rss / 1024,
    }


def born_digital_overhead(pages: int, rounds: int) -> tuple[float, float]:
    from sluice.parsing import extract_isolated, sniff
    from sluice.parsing.ocr import TesseractEngine
    from sluice.parsing.options import ParserOptions

    data = born_digital_pdf([page_lines(i, lines=30) for i in range(pages)])
    kind = sniff(data, "born.pdf")
    budget = bench_budget()
    timings: dict[str, list[float]] = {"off": [], "auto": []}
    for _ in range(rounds):
        for mode in ("off", "auto"):
            started = time.perf_counter()
            document = extract_isolated(data, kind, budget, None, ParserOptions(ocr=mode), TesseractEngine())
            timings[mode].append(time.perf_counter() - started)
            assert not document.ocr_pages
    return statistics.median(timings["off"]), statistics.median(timings["auto"])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--born-digital-pages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--worker", nargs=2, type=float, help=argparse.SUPPRESS)
    parser.add_argument("--command-line", nargs=2, type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(int(args.worker[0]), args.worker[1], args.pages)))
        return 0
    if args.command_line:
        print(json.dumps(command_line(int(args.command_line[0]), args.command_line[1], args.pages)))
        return 0

    def fresh(flag: str, dpi: int, noise: float) -> dict[str, float]:
        out = subprocess.run(
            [sys.executable, __file__, flag, str(dpi), str(noise), "--pages", str(args.pages)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ},
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    print(f"{args.pages} pages a set, {os.cpu_count()} cores, tesseract {_version()}")
    print(f"{'figure':<44} {'this project':>13} {'tesseract CLI':>14} {'ratio':>7}")
    for dpi, noise in SETS:
        ours, theirs = fresh("--worker", dpi, noise), fresh("--command-line", dpi, noise)
        label = f"{dpi} dpi{' + noise' if noise else ''}"
        rows = [
            (
                f"{label}: character error rate",
                f"{ours['cer']:.2%}",
                f"{theirs['cer']:.2%}",
                ours["cer"] / theirs["cer"] if theirs["cer"] else float("nan"),
            ),
            (
                f"{label}: pages/s per core",
                f"{args.pages / ours['cpu']:.2f}",
                f"{args.pages / theirs['cpu']:.2f}",
                theirs["cpu"] / ours["cpu"],
            ),
            (
                f"{label}: pages/s wall",
                f"{args.pages / ours['wall']:.2f}",
                f"{args.pages / theirs['wall']:.2f}",
                theirs["wall"] / ours["wall"],
            ),
            (
                f"{label}: peak RSS (MiB)",
                f"{ours['rss_mib']:.0f}",
                f"{theirs['rss_mib']:.0f}",
                ours["rss_mib"] / theirs["rss_mib"],
            ),
        ]
        for name, mine, other, ratio in rows:
            print(f"{name:<44} {mine:>13} {other:>14} {ratio:>7.2f}")
    off, auto = born_digital_overhead(args.born_digital_pages, args.rounds)
    print(
        f"\nborn-digital PDF, {args.born_digital_pages} pages, median of {args.rounds}: "
        f"ocr off {off:.3f} s, ocr auto {auto:.3f} s, overhead {(auto - off) / off:+.1%} (target < 5 %)"
    )
    return 0


def _version() -> str:
    from sluice.parsing.ocr import tesseract_version

    return tesseract_version() or "absent"


if __name__ == "__main__":
    sys.exit(main())
