"""``SluiceRetriever`` for LlamaIndex (``pip install sluice-client[llamaindex]``).

    from sluice_client import Sluice
    from sluice_client.llamaindex import SluiceRetriever
    retriever = SluiceRetriever(Sluice(url, token=token), collections=["contracts"], top_k=4)
    nodes = retriever.retrieve("penalty for late delivery")

Each ``NodeWithScore`` holds the chunk as a ``TextNode`` (its text, and in ``metadata`` its scores,
document id, filename, page span, collection and the document's own metadata) with the result's
score. The search runs as the client's token: a collection out of reach raises ``NotFound``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - depends on the extra
    raise ImportError("sluice_client.llamaindex needs llama-index-core: "
                      "pip install 'sluice-client[llamaindex]'") from exc

from sluice_client import models as m
from sluice_client._retrieval import Retrieval, result_metadata
from sluice_client.aio import AsyncSluice
from sluice_client.client import Sluice


class SluiceRetriever(BaseRetriever):
    """Sluice's search as a LlamaIndex retriever (``retrieve`` and ``aretrieve``)."""

    def __init__(self, client: Sluice | None = None, *, collections: Sequence[str],
                 async_client: AsyncSluice | None = None, top_k: int | None = None,
                 candidates: int | None = None, filters: dict[str, Any] | None = None, alpha: float | None = None,
                 search_fields: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if client is None and async_client is None:
            raise ValueError("SluiceRetriever needs client= (Sluice) or async_client= (AsyncSluice)")
        self.client, self.async_client = client, async_client
        self.collections = list(collections)
        self.top_k, self.candidates, self.filters, self.alpha = top_k, candidates, filters, alpha
        self.search_fields = dict(search_fields or {})
        super().__init__(**kwargs)

    def _retrieval(self) -> Retrieval:
        return Retrieval(self.collections, self.top_k, self.candidates, self.filters, self.alpha,
                         dict(self.search_fields))

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.client is None:
            raise ValueError("SluiceRetriever needs client= (a sluice_client.Sluice) to retrieve synchronously")
        return _nodes(self.client.send(self._retrieval().op(query_bundle.query_str)))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.async_client is None:
            return await asyncio.to_thread(self._retrieve, query_bundle)
        return _nodes(await self.async_client.send(self._retrieval().op(query_bundle.query_str)))


def _nodes(found: m.SearchOut) -> list[NodeWithScore]:
    nodes = []
    for r in found.results:
        node = TextNode(id_=f"{r.document_id}:{r.chunk_index}", text=r.content, metadata=result_metadata(r))
        nodes.append(NodeWithScore(node=node, score=r.score))
    return nodes
