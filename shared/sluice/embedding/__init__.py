"""Embedding: the catalog, the provider protocol, and the local, OpenAI-compatible and Bedrock providers.

A collection's ``EmbeddingSpec`` (R-EMB-1) goes to ``build_embedder`` with the
clients the function built at cold start; the embedder it returns batches,
retries and bounds its calls (R-EMB-3), and a refusal raises an
``EmbeddingCallError`` whose ``summary()`` is the document's error_message (R-DOC-4).
"""

from sluice.embedding.catalog import CatalogModel, catalog_path, find_model, load_catalog
from sluice.embedding.embedders import build_embedder, clear_embedder_cache
from sluice.embedding.protocol import Embedder, EmbeddingSpec, SecretReader
from sluice.embedding.secrets import SecretsManagerKeyVault, SecretsManagerSecretReader, api_key_from_secret

__all__ = [
    "CatalogModel",
    "Embedder",
    "EmbeddingSpec",
    "SecretReader",
    "SecretsManagerKeyVault",
    "SecretsManagerSecretReader",
    "api_key_from_secret",
    "build_embedder",
    "catalog_path",
    "clear_embedder_cache",
    "find_model",
    "load_catalog",
]
