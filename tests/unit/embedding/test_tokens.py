"""Tokens counted with the bundled model's own tokenizer, every one of them."""

from __future__ import annotations

from sluice.embedding.tokens import bundled_token_counter


def test_counts_past_the_models_window_and_without_special_tokens():
    counter = bundled_token_counter()
    assert counter.count("") == 0
    assert counter.count("hello world") == 2  # no [CLS]/[SEP]
    long = "harbour " * 5000
    assert counter.count(long) == 5000  # the bundled tokenizer truncates at 128; a count may not


def test_a_long_text_counts_the_same_whole_or_in_slices():
    counter = bundled_token_counter()
    text = "The quick brown fox jumps over the lazy dog. " * 20_000  # over one slice
    assert counter.count(text) == 10 * 20_000


def test_dense_text_counts_as_dense():
    counter = bundled_token_counter()
    identifiers = "0x7f3a9c_e21b 0x88d4ff_0aa1 " * 100
    prose = "the river ran past the old mill " * 100
    assert len(identifiers) < len(prose) * 1.2
    assert counter.count(identifiers) > 3 * counter.count(prose)
