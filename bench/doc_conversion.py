"""Legacy Word (.doc): what reading one costs, through LibreOffice in the parse child (issue 12).

    .venv/bin/python bench/doc_conversion.py [--runs 5]

One generated document (a few paragraphs) is saved as .docx and, by LibreOffice, as .doc. Each
is read the way the parse stage reads it (``extract_isolated``: a fresh child process, its
limits, for .doc a ``soffice --convert-to txt`` with a profile folder of its own), ``--runs``
times, one after the other; then two .doc reads at once. Figures are medians of the same run.
The .docx read (a pure-Python reader in the same child) is the comparison: the ratio is what
a .doc costs over the format that replaced it. Needs LibreOffice (``soffice``) on the PATH.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from harness import ROOT, print_table

sys.path.insert(0, str(ROOT))

PARAGRAPHS = [
    "Legacy memo: the loading dock closes at six on Fridays.",
    "Deliveries after six wait at the north gate until Monday.",
    "The on-call engineer rotates the signing keys every ninety days and records it in the ledger.",
] * 5


def timed_read(data: bytes, name: str) -> float:
    from sluice.config import get_settings
    from sluice.parsing import ParseBudget, extract_isolated, sniff

    started = time.perf_counter()
    text = extract_isolated(data, sniff(data, name), ParseBudget.from_settings(get_settings())).text
    elapsed = time.perf_counter() - started
    assert PARAGRAPHS[0] in text, text[:200]
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not (shutil.which("soffice") or shutil.which("libreoffice")):
        print("LibreOffice (soffice) is not installed: nothing to measure (README: Legacy Word documents)")
        return 1
    from tests.unit.parsing.parsing_samples import doc_bytes, docx_bytes

    docx = docx_bytes(PARAGRAPHS)
    (doc,) = doc_bytes([PARAGRAPHS])
    doc_times, docx_times = [], []
    for _ in range(args.runs):  # interleaved, so both see the same load on a shared machine
        doc_times.append(timed_read(doc, "memo.doc"))
        docx_times.append(timed_read(docx, "memo.docx"))
    pairs = []
    for _ in range(max(1, args.runs // 2)):
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda _: timed_read(doc, "memo.doc"), range(2)))
        pairs.append(time.perf_counter() - started)

    one_doc, one_docx = statistics.median(doc_times), statistics.median(docx_times)
    two_docs = statistics.median(pairs)
    print_table(
        f"Reading a .doc in the parse child: medians of {args.runs} runs (pairs: {len(pairs)}), seconds",
        ["figure", "Sluice", "comparison", "ratio"],
        [
            ["one .doc (LibreOffice) vs the same text as .docx", one_doc, one_docx, one_doc / one_docx],
            ["two .doc at once (wall) vs one .doc", two_docs, one_doc, two_docs / one_doc],
        ],
        number_format="{:,.2f}",
    )
    print(f"\n.doc runs: {', '.join(f'{t:.2f}' for t in doc_times)} s; .docx runs: "
          f"{', '.join(f'{t:.2f}' for t in docx_times)} s; LibreOffice: {shutil.which('soffice')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
