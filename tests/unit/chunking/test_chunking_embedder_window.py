"""CHARS_PER_TOKEN against the real all-MiniLM-L6-v2 tokenizer: derived chunks fit its 256 word pieces.

The tokenizer is the one the service embeds with (the exported model's ``tokenizer.json``, read by
``tokenizers``). Skipped where the shared scifact corpus is not beside the repository; the number
itself is justified in chunking/config.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluice.chunking import IngestionConfig, resolve_plan, split_text

SCIFACT = Path(__file__).resolve().parents[3].parent / "shared" / "bench" / "retrieval" / "scifact" / "corpus.jsonl"
MINILM_TOKENS = 256


@pytest.fixture(scope="module")
def tokenizer():
    """Word pieces of each text, [CLS] and [SEP] included, never truncated."""
    from tokenizers import Tokenizer

    from sluice.embedding.local import MINILM, TOKENIZER_FILENAME, model_dir

    pieces = Tokenizer.from_file(str(model_dir(MINILM) / TOKENIZER_FILENAME))
    pieces.no_truncation()
    pieces.no_padding()

    def count(texts: list[str], special: bool = True) -> list[int]:
        return [len(e.ids) for e in pieces.encode_batch(texts, add_special_tokens=special)]

    return count


@pytest.fixture(scope="module")
def english() -> str:
    if not SCIFACT.exists():
        pytest.skip("the shared scifact corpus is not beside the repository")
    abstracts = []
    with SCIFACT.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            abstracts.append(f"{record['title']}\n\n{record['text']}")
            if len(abstracts) == 400:
                break
    return "\n\n".join(abstracts)


def test_chunks_of_the_derived_size_fit_the_window_of_all_minilm(tokenizer, english):
    plan = resolve_plan(IngestionConfig(), max_input_tokens=MINILM_TOKENS)
    chunks = split_text(english, plan)
    counts = tokenizer([c.content for c in chunks])  # with [CLS] [SEP]
    over = sum(count > MINILM_TOKENS for count in counts)
    assert len(chunks) > 300
    # 2.5 chars a piece was chosen to overflow at most a fraction of a percent of real English windows
    assert over / len(chunks) <= 0.01, f"{over} of {len(chunks)} chunks exceed {MINILM_TOKENS} pieces"
    # the price of that margin: the typical chunk fills a little over half the
    # window (about 140 of 256 on this text), not a third of it
    assert sorted(counts)[len(counts) // 2] > MINILM_TOKENS * 0.4


def test_the_2500_character_default_would_not_fit(tokenizer, english):
    pieces = tokenizer([english[:2500]], special=False)[0]
    assert pieces > 2 * MINILM_TOKENS * 0.9
