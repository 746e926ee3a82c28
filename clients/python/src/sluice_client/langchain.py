"""``SluiceRetriever`` for LangChain (``pip install sluice-client[langchain]``).

    from sluice_client import Sluice
    from sluice_client.langchain import SluiceRetriever
    retriever = SluiceRetriever(client=Sluice(url, token=token), collections=["contracts"], top_k=4)
    docs = retriever.invoke("penalty for late delivery")

Each ``Document`` holds the chunk's text as ``page_content`` and, in ``metadata``, its scores,
document id, filename, page span, collection and the document's own metadata. The search runs
as the client's token: a collection out of the caller's reach raises ``NotFound``.
"""

from __future__ import annotations

from typing import Any

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # pragma: no cover - depends on the extra
    raise ImportError("sluice_client.langchain needs langchain-core: pip install 'sluice-client[langchain]'") from exc

from pydantic import Field

from sluice_client import models as m
from sluice_client._retrieval import Retrieval, result_metadata
from sluice_client.aio import AsyncSluice
from sluice_client.client import Sluice


class SluiceRetriever(BaseRetriever):
    """Sluice's search as a LangChain retriever (sync and async)."""

    client: Sluice | None = None
    async_client: AsyncSluice | None = Field(default=None, description="Used by ainvoke; without it, the sync "
                                                                        "client runs in a thread.")
    collections: list[str]
    top_k: int | None = None
    candidates: int | None = None
    filters: dict[str, Any] | None = None
    alpha: float | None = None
    search_fields: dict[str, Any] = Field(default_factory=dict,
                                          description="Any other field of the service's search request.")

    def _retrieval(self) -> Retrieval:
        return Retrieval(self.collections, self.top_k, self.candidates, self.filters, self.alpha,
                         dict(self.search_fields))

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if self.client is None:
            raise ValueError("SluiceRetriever needs client= (a sluice_client.Sluice) to search synchronously")
        return _documents(self.client.send(self._retrieval().op(query)))

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun) -> list[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        return _documents(await self.async_client.send(self._retrieval().op(query)))


def _documents(found: m.SearchOut) -> list[Document]:
    return [Document(page_content=r.content, metadata=result_metadata(r)) for r in found.results]
