"""The offline embedder: the bundled all-MiniLM-L6-v2, loaded once per process."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from sluice.embedding import EmbeddingSpec, build_embedder
from sluice.embedding import local as local_module
from sluice.embedding.local import LocalEmbedder

SPEC = EmbeddingSpec("local", "all-MiniLM-L6-v2", 384)


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    built = build_embedder(SPEC)
    assert isinstance(built, LocalEmbedder)
    built.embed_query("warm up")  # loads the model once for the whole module
    return built


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_are_384_wide_and_normalised(embedder):
    vectors = embedder.embed_documents(["The sluice gate controls the flow of water.", "Second text."])

    assert [len(v) for v in vectors] == [384, 384]
    for v in vectors:
        assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, abs_tol=1e-4)
    assert embedder.max_input_tokens == 256


def test_similar_sentences_are_closer_than_unrelated_ones(embedder):
    query = embedder.embed_query("How do I reset my password?")
    near, far = embedder.embed_documents(
        ["Steps to change a forgotten account password.", "The recipe needs two cups of flour and an egg."]
    )

    assert cosine(query, near) > cosine(query, far) + 0.2


def test_a_query_and_the_same_text_as_a_document_agree(embedder):
    text = "Vectors live in pgvector."
    assert embedder.embed_query(text) == pytest.approx(embedder.embed_documents([text])[0], abs=1e-5)


def test_the_model_loads_once_per_process(embedder):
    first = build_embedder(SPEC)
    # an endpoint or key on a local spec changes nothing: same embedder, same model
    again = build_embedder(EmbeddingSpec("local", "all-MiniLM-L6-v2", 384, secret_id="ignored"))

    assert again is first
    assert again.spec == SPEC
    assert first.model is embedder.model
    assert list(local_module._models) == ["all-MiniLM-L6-v2"]


def test_importing_the_package_does_not_load_the_model_library():
    # Run apart: this test process has long since imported sentence_transformers.
    shared = Path(__file__).resolve().parents[3] / "shared"
    code = (
        "import sys, sluice.embedding as e; e.find_model('local', 'all-MiniLM-L6-v2');"
        "e.build_embedder(e.EmbeddingSpec('local', 'all-MiniLM-L6-v2', 384));"
        "print('sentence_transformers' in sys.modules, 'torch' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(shared)},
    )
    assert result.stdout.split() == ["False", "False"]
