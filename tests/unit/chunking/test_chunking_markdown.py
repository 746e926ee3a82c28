"""The markdown strategy: heading sections, the heading kept in each chunk, recursive inside sections."""

from __future__ import annotations

import logging

from sluice.chunking import ChunkingPlan, split_text
from sluice.chunking.markdown import find_sections


def plan(size: int, overlap: int = 0) -> ChunkingPlan:
    return ChunkingPlan("markdown", size, overlap)


def contents(text: str, size: int, overlap: int = 0) -> list[str]:
    return [chunk.content for chunk in split_text(text, plan(size, overlap))]


def test_sections_are_split_at_headings_even_when_they_would_fit_together():
    text = "# Install\n\nRun the installer.\n\n## Configure\n\nEdit the file."
    assert contents(text, 500) == [
        "# Install\n\nRun the installer.",
        "## Configure\n\nEdit the file.",
    ]


def test_text_before_the_first_heading_is_its_own_section_without_a_heading():
    text = "Preface text.\n\n# One\n\nBody one."
    assert contents(text, 500) == ["Preface text.", "# One\n\nBody one."]


def test_a_heading_inside_a_fenced_code_block_is_not_a_boundary():
    text = "# Script\n\n```bash\n# not a heading\necho hi\n```\n\n~~~~\n## still code\n~~~~\n\nAfter."
    assert contents(text, 500) == [text]


def test_only_atx_headings_start_sections():
    text = "# Real\n\n#hashtag is text\n####### seven is text\n    # indented code\nend"
    assert len(contents(text, 500)) == 1
    assert len(find_sections("# A\ntext\n   ### B\ntext")) == 2


def test_consecutive_headings_form_one_heading_block():
    text = "# Guide\n\n## Install\n\nRun it."
    assert contents(text, 500) == ["# Guide\n\n## Install\n\nRun it."]


def test_a_long_section_repeats_its_heading_in_every_chunk_and_stays_within_the_size():
    body = " ".join(f"word{i:02d}" for i in range(40))  # 6 characters a word
    text = f"intro\n\n## Section\n\n{body}\n\n## Next\n\nshort"
    chunks = split_text(text, plan(60, 14))
    section = [c for c in chunks if "word" in c.content]
    assert len(section) > 3
    for chunk in section:
        assert chunk.content.startswith("## Section\n\nword")
        assert len(chunk.content) <= 60
    # the overlap ceiling applies inside the section: the last words repeat, up to 14 characters
    first_words = section[0].content.split()[2:]
    second_words = section[1].content.split()[2:]
    assert second_words[:2] == first_words[-2:]
    assert chunks[-1].content == "## Next\n\nshort"


def test_offsets_cover_the_heading_in_a_sections_first_chunk_and_the_body_after():
    body = " ".join(f"word{i:02d}" for i in range(20))
    text = f"## Section\n\n{body}"
    chunks = split_text(text, plan(60))
    assert chunks[0].char_start == 0
    assert chunks[0].content == text[0 : chunks[0].char_end]
    for chunk in chunks[1:]:
        assert chunk.content == "## Section\n\n" + text[chunk.char_start : chunk.char_end]


def test_a_heading_too_long_to_repeat_is_split_as_plain_text(caplog):
    heading = "# " + "Long title " * 8  # 90 characters: over half of 100
    text = heading + "\n\n" + "body text " * 30
    with caplog.at_level(logging.WARNING, logger="sluice.chunking"):
        chunks = split_text(text, plan(100))
    assert all(len(c.content) <= 100 for c in chunks)
    assert chunks[0].content.startswith("# Long title")
    assert not chunks[1].content.startswith("#")
    assert any("heading block" in r.getMessage() for r in caplog.records)


def test_a_heading_at_the_end_with_no_body_is_kept():
    assert contents("# One\n\nBody.\n\n# Last\n", 500) == ["# One\n\nBody.", "# Last"]


def test_crlf_text_is_split_at_its_headings():
    text = "# A\r\n\r\nalpha\r\n# B\r\n\r\nbeta\r\n"
    assert contents(text, 500) == ["# A\n\nalpha", "# B\n\nbeta"]
