"""Fuzz every format reader for a set time: inputs tried per format and how each ended.

    .venv/bin/python bench/fuzz.py                      # 30 s per format, through the parse child
    .venv/bin/python bench/fuzz.py --seconds 5 --in-process   # many more inputs, without the child's limits

Mutations of real files from ../shared/corpus/real/ (where present) and of the generated samples
(tests/unit/parsing/fuzzing.py, the same as the suite's test) go through sniff and the isolated parse
child, as the parse stage reads an upload. A row counts the inputs tried, those that ended in text,
in a refusal (by class), and the findings: anything else (an exception that is not a refusal, a
refusal without a sentence or showing internals, a child that died, a read past the time limit).
Findings are printed with the seed and the mutation, and the script exits 1 if there are any.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.unit.parsing.fuzzing import (  # noqa: E402
    CRASH_SENTENCE,
    FORMATS,
    corpus_present,
    edits,
    fuzz_budget,
    mutate,
    problems_with,
    read_like_the_parse_stage,
    seeds,
)


def fuzz_format(extension: str, seconds: float, isolated: bool, seed_files: int) -> tuple[collections.Counter, list]:
    counts: collections.Counter[str] = collections.Counter()
    findings: list[tuple[str, object, str]] = []
    candidates = seeds(extension, seed_files)
    limits = fuzz_budget()
    deadline = time.monotonic() + seconds

    @settings(max_examples=10**9, deadline=None, database=None, print_blob=False,
              suppress_health_check=list(HealthCheck))
    @given(seed=st.sampled_from(candidates), plan=st.lists(edits, min_size=1, max_size=4))
    def read(seed, plan):
        if time.monotonic() > deadline:
            raise _TimeUp
        name, data = seed
        counts["tried"] += 1
        try:
            outcome = read_like_the_parse_stage(name, mutate(data, plan), limits, isolated=isolated)
        except Exception as exc:  # a finding, not a stop
            findings.append((name, plan, f"{type(exc).__name__}: {exc}"[:300]))
            return
        counts[outcome.kind] += 1
        if outcome.kind == "refused":
            counts[f"refused:{outcome.detail}"] += 1
        problems = problems_with(outcome, limits)
        if CRASH_SENTENCE in outcome.message:
            problems.append("the parse child died")
        findings.extend((name, plan, p) for p in problems)

    with contextlib.suppress(_TimeUp):
        read()
    return counts, findings


class _TimeUp(BaseException):  # BaseException: hypothesis does not treat it as a failing example
    pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="time per format")
    parser.add_argument("--in-process", action="store_true", help="extract in this process (no child limits)")
    parser.add_argument("--seed-files", type=int, default=5, help="real files per format used as seeds")
    parser.add_argument("--formats", nargs="*", default=sorted(FORMATS))
    args = parser.parse_args()
    print(f"corpus: {'../shared/corpus/real' if corpus_present() else 'absent (generated samples only)'}; "
          f"{'in process' if args.in_process else 'through the parse child'}; {args.seconds:g} s per format")
    print("| format | seeds | inputs tried | text | refused | findings | top refusals |")
    print("|---|---|---|---|---|---|---|")
    total, all_findings = 0, []
    for extension in args.formats:
        counts, findings = fuzz_format(extension, args.seconds, not args.in_process, args.seed_files)
        total += counts["tried"]
        all_findings.extend((extension, *f) for f in findings)
        top = sorted(((v, k.split(":", 1)[1]) for k, v in counts.items() if k.startswith("refused:")), reverse=True)
        print(f"| {extension} | {len(seeds(extension, args.seed_files))} | {counts['tried']} | {counts['text']} | "
              f"{counts['refused']} | {len(findings)} | {', '.join(f'{k} {v}' for v, k in top[:3])} |")
    print(f"\ninputs tried: {total}; findings: {len(all_findings)}")
    for extension, name, plan, problem in all_findings[:50]:
        print(f"- {extension} {name}: {problem}\n  {plan}")
    return 1 if all_findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
