"""The fixed strategy: lines merged up to the size, never cut; an over-size line is emitted whole."""

from __future__ import annotations

import logging

from sluice.chunking import ChunkingPlan, split_text


def plan(size: int, overlap: int = 0) -> ChunkingPlan:
    return ChunkingPlan("fixed", size, overlap)


def test_lines_are_merged_up_to_the_size_and_broken_only_at_line_ends():
    text = "first line here\nsecond line\nthird one is longer than that"
    chunks = split_text(text, plan(30))
    # "second line" alone would leave room for words of the third line; fixed does not take them
    assert [c.content for c in chunks] == ["first line here\nsecond line", "third one is longer than that"]


def test_overlap_repeats_trailing_lines_that_fit():
    text = "\n".join(f"line {i}" for i in range(1, 7))  # 6 characters each
    chunks = split_text(text, plan(20, 7))
    assert [c.content for c in chunks] == [
        "line 1\nline 2\nline 3",
        "line 3\nline 4\nline 5",
        "line 5\nline 6",
    ]


def test_an_over_size_line_is_emitted_whole_with_a_warning_that_holds_no_text(caplog):
    secret = "confidential-" + "z" * 87  # 100 characters on one line
    text = f"before\n{secret}\nafter"
    with caplog.at_level(logging.WARNING, logger="sluice.chunking"):
        chunks = split_text(text, plan(40))
    assert [c.content for c in chunks] == ["before", secret, "after"]
    warnings = [r for r in caplog.records if r.name == "sluice.chunking" and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "100" in warnings[0].getMessage()
    assert "confidential" not in warnings[0].getMessage()


def test_a_line_of_exactly_the_size_passes_silently(caplog):
    line = "q" * 40
    with caplog.at_level(logging.WARNING, logger="sluice.chunking"):
        chunks = split_text(f"{line}\n{line}", plan(40))
    assert [c.content for c in chunks] == [line, line]
    assert not [r for r in caplog.records if r.name == "sluice.chunking"]


def test_blank_lines_make_no_chunks_and_offsets_locate_the_content():
    text = "\n\n  alpha\n\n\n   \nbeta\n"
    chunks = split_text(text, plan(8))
    assert [c.content for c in chunks] == ["alpha", "beta"]
    for chunk in chunks:
        assert text[chunk.char_start : chunk.char_end] == chunk.content
