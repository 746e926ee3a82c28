"""Properties every strategy keeps, on generated text and plans."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.chunking import ChunkingPlan, split_text

WORDS = st.one_of(
    st.text(alphabet="abcdeXYZ019.,", min_size=1, max_size=12),
    st.text(alphabet="lmnop", min_size=30, max_size=250),  # a word longer than many sizes
)
SEPARATORS = st.sampled_from([" ", "  ", "\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", " \n \n", "\f"])
MARKDOWN = st.sampled_from(["\n# ", "\n## ", "\n###### ", "\n####### ", "\n```\n", "\n~~~\n", "\n   # ", "#", "\n#\n"])
TEXTS = st.one_of(
    st.lists(st.one_of(WORDS, SEPARATORS, SEPARATORS, MARKDOWN), max_size=120).map("".join),
    st.text(max_size=400),
)


@st.composite
def plans(draw) -> ChunkingPlan:
    size = draw(st.integers(min_value=1, max_value=160))
    overlap = draw(st.integers(min_value=0, max_value=size - 1))
    return ChunkingPlan(draw(st.sampled_from(["recursive", "markdown", "fixed"])), size, overlap)


def squeeze(text: str) -> str:
    return "".join(text.split())


def assert_markdown_content(text: str, content: str, start: int, end: int) -> None:
    """Either the slice itself, or a heading block, a blank line, and a suffix of the slice."""
    span = text[start:end]
    if content == span:
        return
    for cut in range(len(content) - 1):
        if content[cut : cut + 2] != "\n\n":
            continue
        heading, body = content[:cut], content[cut + 2 :]
        if body and span.endswith(body) and heading.startswith("#") and heading in text:
            return
    raise AssertionError(f"markdown chunk {content!r} does not come from {span!r}")


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, plan=plans())
def test_chunks_are_bounded_ordered_located_and_lose_no_text(text, plan):
    chunks = split_text(text, plan)

    assert [c.index for c in chunks] == list(range(len(chunks)))
    previous_start = previous_end = 0
    covered = []
    for chunk in chunks:
        # never empty, never blank
        assert chunk.content.strip()
        assert 0 <= chunk.char_start < chunk.char_end <= len(text)
        # in order: starts and ends never go back
        assert chunk.char_start >= previous_start and chunk.char_end >= previous_end
        # bounded, except the documented fixed exception: one whole over-size line
        if len(chunk.content) > plan.chunk_size:
            assert plan.strategy == "fixed"
            assert "\n" not in chunk.content
        if plan.strategy == "markdown":
            assert_markdown_content(text, chunk.content, chunk.char_start, chunk.char_end)
        else:
            assert chunk.content == text[chunk.char_start : chunk.char_end]
        # the part this chunk adds beyond the previous one's end
        covered.append(text[max(chunk.char_start, previous_end) : chunk.char_end])
        previous_start, previous_end = chunk.char_start, chunk.char_end

    # the non-overlapping parts put back together are the text, whitespace aside
    assert squeeze("".join(covered)) == squeeze(text)


@st.composite
def paged_texts(draw) -> tuple[str, list[tuple[int, int, int]]]:
    text = draw(TEXTS)
    cuts = sorted(draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=8)))
    bounds = [0, *cuts, len(text)]
    pages = []
    for number, (start, end) in enumerate(zip(bounds, bounds[1:], strict=False), start=1):
        # leave a gap now and then, as a parser does between pages
        gap = draw(st.integers(min_value=0, max_value=2))
        pages.append((number, min(start + gap, end), end))
    return text, pages


@settings(max_examples=300, deadline=None, database=None)
@given(paged=paged_texts(), plan=plans())
def test_page_spans_are_the_first_and_last_page_a_chunk_touches(paged, plan):
    text, pages = paged
    chunks = split_text(text, plan, pages=pages)
    assert bool(chunks) == bool(text.strip())  # the loop below runs whenever there is text to cut
    for chunk in chunks:
        # a page with no text (start == end) holds no part of a chunk
        touched = [n for n, start, end in pages if start < end and start < chunk.char_end and chunk.char_start < end]
        expected = (touched[0], touched[-1]) if touched else (None, None)
        assert (chunk.page_start, chunk.page_end) == expected
