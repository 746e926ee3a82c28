"""What a collection records about how it embeds, and what every provider offers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class EmbeddingSpec:
    """A collection's embedding space and where it is served from (R-EMB-1).

    ``model`` and ``dim`` define the space and never change for a collection;
    ``provider``, ``base_url`` and ``secret_id`` say who answers and whose key pays.
    """

    provider: str
    model: str
    dim: int
    base_url: str | None = None
    secret_id: str | None = None


@runtime_checkable
class Embedder(Protocol):
    spec: EmbeddingSpec
    max_input_tokens: int

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; batched into as many provider calls as needed."""
        ...

    def embed_query(self, text: str) -> list[float]: ...


class SecretReader(Protocol):
    def get_secret(self, secret_id: str) -> str:
        """The API key held by ``secret_id`` (a plain string or JSON ``{"api_key": ...}``)."""
        ...
