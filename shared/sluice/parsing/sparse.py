"""The too-sparse refusal (R-PARSE-3), built here so its sentence is written once."""

from __future__ import annotations

from sluice.errors import SparseDocumentError


def too_sparse(word_count: int) -> SparseDocumentError:
    """The error the chunk stage raises when a document's text yields no chunk."""
    noun = "word" if word_count == 1 else "words"
    return SparseDocumentError(f"Document is too sparse to index ({word_count:,} {noun} of text found)")
