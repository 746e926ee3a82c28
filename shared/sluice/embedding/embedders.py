"""The embedder for a collection's ``EmbeddingSpec``, built once per process and reused."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import httpx

from sluice.config import EmbeddingSettings
from sluice.embedding.bedrock import BedrockEmbedder
from sluice.embedding.catalog import find_model
from sluice.embedding.endpoints import NOT_HTTP, deployment_policy, guarded_http_client, http_host
from sluice.embedding.local import LocalEmbedder
from sluice.embedding.openai_compatible import DEFAULT_TIMEOUT, OpenAICompatibleEmbedder
from sluice.embedding.protocol import Embedder, EmbeddingSpec, SecretReader
from sluice.errors import ValidationError

# Enough for every collection a warm worker meets; a bound so a long-lived
# local runtime cycling through test collections does not grow without end.
_CACHE_SIZE = 64

_embedders: OrderedDict[tuple[Any, ...], tuple[Embedder, tuple[Any, ...]]] = OrderedDict()
_cache_lock = threading.Lock()
_default_http: httpx.Client | None = None


def build_embedder(
    spec: EmbeddingSpec,
    *,
    secrets: SecretReader | None = None,
    bedrock_client: Any = None,
    http_client: httpx.Client | None = None,
    batch_size: int = EmbeddingSettings.model_fields["embed_batch_size"].default,
) -> Embedder:
    """The process's embedder for ``spec``, served by the clients given.

    A spec whose model or width the catalog does not list is refused with a
    ``ValidationError`` naming the field. Embedders are cached per spec and
    per client: clients are built once per cold start, so a warm function gets
    the same embedder, and the local model inside it, every time.
    """
    catalog_model = find_model(spec.provider, spec.model, spec.dim)
    if spec.provider == "local":
        # The endpoint and key mean nothing to a bundled model.
        key: tuple[Any, ...] = ("local", spec.model, spec.dim)
        clients: tuple[Any, ...] = ()
    else:
        # By identity: the cache entry holds the clients, so an id cannot be reused while cached.
        key = (spec, id(secrets), id(bedrock_client), id(http_client))
        clients = (secrets, bedrock_client, http_client)
    with _cache_lock:
        hit = _embedders.get(key)
        if hit is not None:
            _embedders.move_to_end(key)
            return hit[0]

    embedder: Embedder
    if spec.provider == "local":
        local_spec = EmbeddingSpec("local", spec.model, spec.dim)
        embedder = LocalEmbedder(local_spec, catalog_model, batch_size=batch_size)
    elif spec.provider == "openai":
        _check_base_url(spec.base_url)
        if spec.secret_id and secrets is None:
            raise ValueError("a spec naming a secret_id needs a SecretReader")
        embedder = OpenAICompatibleEmbedder(
            spec,
            catalog_model,
            http_client=http_client or _shared_http_client(),
            secrets=secrets,
            batch_size=batch_size,
        )
    elif spec.provider == "bedrock":
        if bedrock_client is None:
            raise ValueError("a bedrock spec needs a bedrock-runtime client")
        embedder = BedrockEmbedder(spec, catalog_model, client=bedrock_client)
    else:  # find_model already refused it; kept so a new catalog provider cannot slip through
        raise ValidationError(
            "Unknown embedding provider",
            fields={"embedding_provider": f"'{spec.provider}' is not a provider"},
        )

    with _cache_lock:
        # Two threads may have built one each; the first stored wins, so callers share it.
        stored = _embedders.setdefault(key, (embedder, clients))
        _embedders.move_to_end(key)
        while len(_embedders) > _CACHE_SIZE:
            _embedders.popitem(last=False)
    return stored[0]


def clear_embedder_cache() -> None:
    """Forget built embedders (tests, and a local runtime that rebuilt its clients); loaded models stay."""
    with _cache_lock:
        _embedders.clear()


def _check_base_url(base_url: str | None) -> None:
    if base_url is None:
        return
    if http_host(base_url) is None:
        raise ValidationError("Invalid embedding endpoint", fields={"embedding_base_url": NOT_HTTP})


def _shared_http_client() -> httpx.Client:
    # Made on first use, never at import: one connection pool for every openai embedder.
    global _default_http
    with _cache_lock:
        if _default_http is None:
            _default_http = guarded_http_client(deployment_policy(), timeout=DEFAULT_TIMEOUT)
        return _default_http
