"""The offline embedder: the bundled all-MiniLM-L6-v2, exported to ONNX, loaded once per process."""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sluice.embedding import EmbeddingSpec, build_embedder, find_model
from sluice.embedding import local as local_module
from sluice.embedding.local import LocalEmbedder
from sluice.errors import EmbeddingModelNotServedError

SPEC = EmbeddingSpec("local", "all-MiniLM-L6-v2", 384)
SHARED = Path(__file__).resolve().parents[3] / "shared"


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
    norms = [math.sqrt(sum(x * x for x in v)) for v in vectors]
    assert norms == pytest.approx([1.0, 1.0], abs=1e-4)
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


def test_a_text_s_vector_does_not_depend_on_the_texts_embedded_with_it(embedder):
    # A query is embedded alone and a chunk among its document's: the same text must land in the same place.
    text = "Chunks are written with COPY."
    alone = embedder.embed_query(text)
    batched = embedder.embed_documents(["A long neighbour. " * 40, text, "Short."])

    assert batched[1] == pytest.approx(alone, abs=1e-5)


def test_text_past_256_word_pieces_is_cut_off(embedder):
    long = " ".join(f"word{i}" for i in range(400))  # several word pieces each: far past 256
    same_start = embedder.embed_documents([long, long + " and an ending the window never reaches"])
    other_start = embedder.embed_query("An unrelated opening. " + long)

    assert same_start[1] == pytest.approx(same_start[0], abs=1e-5)
    assert cosine(other_start, same_start[0]) < 0.999


def test_threads_embedding_at_once_get_the_vectors_one_thread_gets(embedder):
    # The local runtime embeds a query while a document's batches run; no lock, no "Already borrowed".
    texts = [f"Thread {n} writes about topic {n * 7} in sentence {k}." for n in range(6) for k in range(20)]
    expected = embedder.embed_documents(texts)
    results: dict[int, list[list[float]]] = {}
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            mine = texts[n * 20 : (n + 1) * 20]
            results[n] = [embedder.embed_query(t) for t in mine[:5]] + embedder.embed_documents(mine[5:])
        except BaseException as exc:  # collected, so a failure in a thread fails the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    got = [v for n in range(6) for v in results[n]]
    assert len(got) == len(expected) == 120
    assert max(abs(x - y) for a, b in zip(got, expected, strict=True) for x, y in zip(a, b, strict=True)) < 1e-5


def test_the_model_loads_once_per_process(embedder):
    first = build_embedder(SPEC)
    # an endpoint or key on a local spec changes nothing: same embedder, same model
    again = build_embedder(EmbeddingSpec("local", "all-MiniLM-L6-v2", 384, secret_id="ignored"))

    assert again is first
    assert again.spec == SPEC
    assert first.model is embedder.model
    assert list(local_module._models) == ["all-MiniLM-L6-v2"]


def test_a_missing_model_file_is_refused_with_the_command_that_makes_it(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(local_module, "_models", {})
    monkeypatch.setenv(local_module.MODEL_DIR_ENV, str(tmp_path))
    fresh = LocalEmbedder(SPEC, find_model("local", "all-MiniLM-L6-v2"))

    with caplog.at_level(logging.ERROR, logger="sluice.embedding"), pytest.raises(EmbeddingModelNotServedError):
        fresh.embed_query("anything")

    assert "sluice model export" in caplog.text
    assert str(tmp_path / "all-MiniLM-L6-v2") in caplog.text


def test_a_model_folder_of_another_export_format_is_refused(tmp_path, monkeypatch, caplog, embedder):
    folder = tmp_path / "all-MiniLM-L6-v2"
    folder.mkdir()
    installed = embedder.model.folder
    for name in ("model.onnx", "tokenizer.json"):
        (folder / name).symlink_to(installed / name)
    (folder / "sluice_model.json").write_text(json.dumps({"format": 99, "dim": 384, "max_seq_length": 256}))
    monkeypatch.setattr(local_module, "_models", {})
    monkeypatch.setenv(local_module.MODEL_DIR_ENV, str(tmp_path))
    fresh = LocalEmbedder(SPEC, find_model("local", "all-MiniLM-L6-v2"))

    with caplog.at_level(logging.ERROR, logger="sluice.embedding"), pytest.raises(EmbeddingModelNotServedError):
        fresh.embed_query("anything")

    assert "export format 99" in caplog.text


def test_the_model_folder_comes_from_the_environment_first(tmp_path, monkeypatch):
    (tmp_path / "all-MiniLM-L6-v2").mkdir()
    (tmp_path / "all-MiniLM-L6-v2" / "model.onnx").write_bytes(b"")
    monkeypatch.setenv(local_module.MODEL_DIR_ENV, str(tmp_path))

    assert local_module.model_dir("all-MiniLM-L6-v2") == tmp_path / "all-MiniLM-L6-v2"


def test_importing_the_package_loads_no_model_library_and_embedding_loads_only_onnxruntime():
    # Run apart: this test process may have imported sentence_transformers (the agreement test).
    code = (
        "import sys, sluice.embedding as e; e.find_model('local', 'all-MiniLM-L6-v2');"
        "emb = e.build_embedder(e.EmbeddingSpec('local', 'all-MiniLM-L6-v2', 384));"
        "libs = ('onnxruntime', 'tokenizers', 'torch', 'transformers', 'sentence_transformers', 'onnx');"
        "print(*[m in sys.modules for m in libs]);"
        "emb.embed_query('now the model loads');"
        "print(*[m in sys.modules for m in libs])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(SHARED)},
    )
    before, after = result.stdout.splitlines()
    assert before.split() == ["False"] * 6
    # onnxruntime and tokenizers on the first text; never torch, transformers, or the exporter's onnx
    assert after.split() == ["True", "True", "False", "False", "False", "False"]
