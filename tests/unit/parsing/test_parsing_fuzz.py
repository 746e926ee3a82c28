"""Fuzzing every format reader (issue 17): mutated real files (../shared/corpus/real/, where present)
and mutated generated samples go through sniff and the isolated parse child, as the parse stage
reads an upload. Every input ends in text or a clean refusal (a DocumentRefused with a sentence
that shows no internals), within the child's time limit and under its memory limit; the text holds
no NUL and no lone surrogate (PostgreSQL and the JSON artifact take neither).

The examples are few and derandomized so the suite stays short and repeatable;
``bench/fuzz.py`` runs the same property for a set time and counts the inputs tried per format.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.parsing.fuzzing import (
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

EXAMPLES_PER_FORMAT = 15  # in this process: milliseconds each
ISOLATED_PER_FORMAT = 1  # through the parse child: half a second each, most of it the interpreter's start


def fuzz(extension: str, examples: int, *, isolated: bool) -> list[str]:
    if not corpus_present():
        print(f"../shared/corpus/real is absent: fuzzing {extension} from the generated sample only")
    candidates = seeds(extension)
    limits = fuzz_budget()
    seen: list[str] = []

    @settings(max_examples=examples, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(seed=st.sampled_from(candidates), plan=st.lists(edits, min_size=1, max_size=3))
    def read(seed, plan):
        name, data = seed
        outcome = read_like_the_parse_stage(name, mutate(data, plan), limits, isolated=isolated)
        seen.append(outcome.kind)
        assert problems_with(outcome, limits) == [], (name, plan)
        assert CRASH_SENTENCE not in outcome.message, (name, plan, "the parse child died")

    read()
    return seen


@pytest.mark.parametrize("extension", sorted(FORMATS))
def test_a_mutated_file_ends_in_text_or_a_clean_refusal(extension):
    seen = fuzz(extension, EXAMPLES_PER_FORMAT, isolated=False)
    assert len(seen) >= EXAMPLES_PER_FORMAT // 2  # hypothesis may stop early once it has tried every small case


@pytest.mark.parametrize("extension", sorted(FORMATS))
def test_a_mutated_file_read_in_the_parse_child_ends_in_text_or_a_clean_refusal(extension):
    assert len(fuzz(extension, ISOLATED_PER_FORMAT, isolated=True)) == ISOLATED_PER_FORMAT


def test_an_unmutated_seed_of_every_format_is_read_as_text():
    """The seeds are worth mutating: unmutated, the generated sample of each format gives text."""
    limits = fuzz_budget()
    for extension in sorted(FORMATS):
        name, data = seeds(extension, limit=0)[-1]
        outcome = read_like_the_parse_stage(name, data, limits, isolated=False)
        assert outcome.kind == "text" and int(outcome.detail) > 0, (extension, outcome)
