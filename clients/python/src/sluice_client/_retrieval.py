"""What the LangChain and LlamaIndex retrievers share: the search they send and a result's metadata."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sluice_client import models as m
from sluice_client._core import Op
from sluice_client._ops import search


@dataclass(frozen=True)
class Retrieval:
    """One retriever's search: its collections, ``top_k``, ``candidates``, ``filters``, ``alpha`` (the text
    side's weight, where the service takes it) and any other field the service's search takes (``extra``)."""

    collections: Sequence[str]
    top_k: int | None = None
    candidates: int | None = None
    filters: m.SearchFilters | dict[str, Any] | None = None
    alpha: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def op(self, query: str) -> Op[m.SearchOut]:
        filters = self.filters.model_dump(mode="json", exclude_unset=True) if isinstance(
            self.filters, m.SearchFilters) else self.filters
        fields = {"top_k": self.top_k, "candidates": self.candidates, "filters": filters, "alpha": self.alpha,
                  **self.extra}
        return search(query, list(self.collections), **{k: v for k, v in fields.items() if v is not None})


def result_metadata(result: m.SearchResultOut) -> dict[str, Any]:
    """A result's metadata as both frameworks carry it: the scores, where it is from, and the document's own."""
    return {
        "score": result.score,
        "vec_score": result.vec_score,
        "text_score": result.text_score,
        "reranker_score": result.reranker_score,
        "document_id": result.document_id,
        "kb_id": result.kb_id,
        "collection": result.collection,
        "filename": result.filename,
        "chunk_index": result.chunk_index,
        "page_start": result.page_start,
        "page_end": result.page_end,
        "metadata": result.metadata.model_dump(mode="json"),
    }
