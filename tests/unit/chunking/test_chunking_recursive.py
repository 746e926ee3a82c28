"""The recursive strategy: paragraph, then line, then word, then character; overlap as a ceiling."""

from __future__ import annotations

from sluice.chunking import ChunkingPlan, split_text


def plan(size: int, overlap: int = 0) -> ChunkingPlan:
    return ChunkingPlan("recursive", size, overlap)


def contents(text: str, size: int, overlap: int = 0) -> list[str]:
    return [chunk.content for chunk in split_text(text, plan(size, overlap))]


def test_a_short_text_is_one_chunk_without_its_surrounding_whitespace():
    chunks = split_text("\n\n  A short note.  \n", plan(100))
    assert [(c.index, c.content, c.char_start, c.char_end) for c in chunks] == [(0, "A short note.", 4, 17)]


def test_whitespace_only_text_gives_no_chunks():
    assert split_text(" \n\n\t \n", plan(100)) == []
    assert split_text("", plan(100)) == []


def test_paragraphs_that_fit_are_merged_and_the_break_falls_between_paragraphs():
    first, second, third = "a" * 30, "b" * 30, "c" * 30
    text = f"{first}\n\n{second}\n\n{third}"
    # 30 + 2 + 30 = 62 fits in 70; a third paragraph would not, and the chunk
    # is not topped up with part of it
    assert contents(text, 70) == [f"{first}\n\n{second}", third]


def test_an_over_size_paragraph_is_split_at_its_lines_and_packed_with_its_neighbours():
    text = "A title\n\nline one is here\nline two is here\nline three here\n\nnext paragraph"
    # the paragraph's lines are packed with the paragraphs around it: the title
    # is not a chunk of its own, nor is the paragraph's last line
    assert contents(text, 35) == [
        "A title\n\nline one is here",
        "line two is here\nline three here",
        "next paragraph",
    ]
    assert contents(text, 45) == [
        "A title\n\nline one is here\nline two is here",
        "line three here\n\nnext paragraph",
    ]


def test_an_over_size_line_is_split_at_its_words():
    text = "alpha beta gamma delta epsilon zeta eta theta"
    assert contents(text, 20) == ["alpha beta gamma", "delta epsilon zeta", "eta theta"]


def test_a_word_longer_than_the_size_is_cut_into_character_windows():
    word = "".join(chr(ord("a") + i % 26) for i in range(50))
    chunks = split_text(f"short {word} tail", plan(20, 5))
    assert [c.content for c in chunks] == ["short", word[0:20], word[15:35], word[30:50], "tail"]
    assert all(len(c.content) <= 20 for c in chunks)


def test_overlap_repeats_whole_pieces_up_to_the_ceiling_and_no_more():
    text = " ".join(f"w{i:03d}" for i in range(1, 13))  # w001 w002 ... 4 characters each
    chunks = contents(text, 24, 10)
    assert chunks[0] == "w001 w002 w003 w004 w005"
    # "w004 w005" is 9 characters; "w003 w004 w005" (14) would pass the ceiling of 10
    assert chunks[1] == "w004 w005 w006 w007 w008"
    assert chunks[2] == "w007 w008 w009 w010 w011"
    assert chunks[3] == "w010 w011 w012"


def test_overlap_is_sometimes_nothing():
    # Each paragraph is 60 characters: the previous one never fits under an
    # overlap of 50, so nothing is repeated
    paragraphs = [c * 60 for c in "xyz"]
    assert contents("\n\n".join(paragraphs), 100, 50) == paragraphs


def test_overlap_carries_a_whole_paragraph_that_fits():
    paragraphs = [c * 20 for c in "pqrst"]
    chunks = contents("\n\n".join(paragraphs), 70, 25)
    assert chunks == [
        "\n\n".join(paragraphs[0:3]),
        "\n\n".join(paragraphs[2:5]),
    ]


def test_chunks_locate_their_content_in_the_original_text():
    text = "One para.\r\n\r\nTwo para with   spaces.\r\n\r\n\r\nThree."
    chunks = split_text(text, plan(12, 3))
    assert [c.content for c in chunks] == ["One para.", "Two para", "with", "spaces.", "Three."]
    assert [text[c.char_start : c.char_end] for c in chunks] == [c.content for c in chunks]


def test_no_chunk_is_longer_than_the_size():
    text = ("word " * 40 + "\n") * 30 + "x" * 500
    assert max(len(c) for c in contents(text, 100, 30)) <= 100
