"""The too-sparse refusal (R-PARSE-3), built here so its sentence is written once."""

from __future__ import annotations

from sluice.errors import SparseDocumentError
from sluice.parsing.document import ParsedDocument


def too_sparse(document: ParsedDocument) -> SparseDocumentError:
    """The error the chunk stage raises when a document's text yields no chunk."""
    words = document.word_count
    noun = "word" if words == 1 else "words"
    return SparseDocumentError(f"Document is too sparse to index ({words:,} {noun} of text found)")
