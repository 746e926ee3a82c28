"""The offline embedder: all-MiniLM-L6-v2 as an ONNX graph on ONNX Runtime's CPU provider.

The same file serves every path (the local runtime, tests, Lambda), so the same
vectors come out everywhere. ``sluice model export`` (``sluice.embedding.export``)
builds it from the bundled weights at build time; this module only reads it,
with ``onnxruntime``, ``tokenizers`` and numpy — no torch, no transformers.

Where the model folder is: ``$SLUICE_MODEL_DIR/<model>``, else the first of
``<this package>/_models/<model>`` (a Lambda layer build puts it there) and
``<python prefix>/share/sluice/models/<model>`` (``make install`` puts it there,
inside the venv) that holds one. The model loads once per process, on the first
text embedded, so functions that only build an embedder (or never embed) do not pay for it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sluice.config import AssetSettings, read
from sluice.embedding.catalog import CatalogModel
from sluice.embedding.protocol import EmbeddingSpec
from sluice.embedding.refusal import refuse
from sluice.errors import EmbeddingModelNotServedError, EmbeddingResponseError

# tokenizers warns on every fork after it has used its own thread pool, and the parse stage forks its child.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MINILM = "all-MiniLM-L6-v2"
MODEL_DIR_ENV = AssetSettings.model_fields["model_dir"].alias
THREADS_ENV = AssetSettings.model_fields["embed_threads"].alias
MODEL_FILENAME = "model.onnx"
TOKENIZER_FILENAME = "tokenizer.json"
MANIFEST_FILENAME = "sluice_model.json"
# The local models a build can export; the catalog may list others, which are refused by name.
EXPORTABLE = (MINILM,)
# What this module can read; sluice.embedding.export writes the same number.
READABLE_FORMAT = 1

_PACKAGED_ROOT = Path(__file__).resolve().parents[1] / "_models"


def default_model_root() -> Path:
    """Where ``sluice model export`` writes without ``--out``: inside the Python environment, so a
    venv and its model come and go together."""
    return Path(sys.prefix) / "share" / "sluice" / "models"


def model_roots() -> list[Path]:
    override = read(AssetSettings).model_dir
    if override:
        return [Path(override)]
    return [_PACKAGED_ROOT, default_model_root()]


def model_dir(name: str) -> Path:
    """The folder serving local model ``name``; raises ``FileNotFoundError`` saying how to make one."""
    roots = model_roots()
    for root in roots:
        if (root / name / MODEL_FILENAME).is_file():
            return root / name
    looked = ", ".join(str(root / name) for root in roots)
    raise FileNotFoundError(
        f"no exported {name} model in {looked}: run `sluice model export` (make install does), "
        f"or point {MODEL_DIR_ENV} at the folder holding {name}/{MODEL_FILENAME}"
    )


def intra_op_threads() -> int:
    """Threads for one inference: $SLUICE_EMBED_THREADS, else the CPUs this process may run on.

    Lambda at 3,008 MB (the embed function) has about 1.7 vCPU and shows 2; a laptop's cores are
    shared with the rest of the local runtime. More threads than CPUs only adds contention.
    """
    configured = read(AssetSettings).embed_threads.strip()
    if configured:
        return max(1, int(configured))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class OnnxSentenceEncoder:
    """One exported sentence encoder: its ONNX Runtime session and its tokenizer, shared by every thread.

    ``InferenceSession.run`` is thread-safe, and the tokenizer is configured once here and only read
    afterwards (HF's "Already borrowed" comes from reconfiguring truncation or padding while another
    thread encodes), so concurrent callers interleave batch by batch: a query is not queued behind
    a whole document.
    """

    def __init__(self, folder: Path, *, threads: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        manifest = json.loads((folder / MANIFEST_FILENAME).read_text(encoding="utf-8"))
        if manifest.get("format") != READABLE_FORMAT:
            raise OSError(f"{folder} holds export format {manifest.get('format')!r}, this build reads "
                          f"{READABLE_FORMAT}: run `sluice model export` again")
        self.folder = folder
        self.dim = int(manifest["dim"])
        self.max_seq_length = int(manifest["max_seq_length"])
        self.precision = str(manifest.get("precision", "fp32"))

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.intra_op_num_threads = threads or intra_op_threads()
        options.inter_op_num_threads = 1
        # Idle pool threads sleep instead of spinning: on two shared cores a spinning pool
        # takes CPU from the other stages (and from the query running beside a document).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(folder / MODEL_FILENAME), options,
                                             providers=["CPUExecutionProvider"])

        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILENAME))
        # The bundled tokenizer.json pads and truncates at 128; sentence-transformers truncates at
        # max_seq_length (256 word pieces, [CLS] and [SEP] included) and pads per batch, which the
        # encoder does itself below.
        tokenizer.enable_truncation(self.max_seq_length)
        tokenizer.no_padding()
        self._tokenizer = tokenizer

    def encode(self, texts: Sequence[str]) -> Any:
        """A float32 matrix, one normalised row per text, in order.

        One text per inference run, unpadded. Measured on scifact chunks of the default plan
        (bench/README.md), runs of 1-4 texts embed about 1.6x as many chunks a second as runs
        of 64 (the activations of a small run stay in cache, and nothing is padding), and a
        text's vector then never depends on the texts beside it, which int8 would otherwise
        make it do (its activations are scaled per run).
        """
        import numpy as np

        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(list(texts))):
            ids = np.asarray([encoding.ids], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            (vector,) = self._session.run(["sentence_embedding"], feed)
            out[row] = vector[0]
        return out


_models: dict[str, OnnxSentenceEncoder] = {}
_load_lock = threading.Lock()


def local_model(name: str) -> OnnxSentenceEncoder:
    """The process's one instance of an exported local model, loaded on first use."""
    model = _models.get(name)
    if model is not None:
        return model
    with _load_lock:
        model = _models.get(name)
        if model is None:
            model = OnnxSentenceEncoder(model_dir(name))
            _models[name] = model
    return model


class LocalEmbedder:
    """The ``local`` provider. ``model`` serves a given encoder instead of the process's own
    (benchmarks compare exports side by side). ``batch_size`` is the provider batch every
    embedder takes; the encoder sizes its own inference runs."""

    def __init__(
        self,
        spec: EmbeddingSpec,
        catalog_model: CatalogModel,
        *,
        batch_size: int = 64,
        model: OnnxSentenceEncoder | None = None,
    ) -> None:
        if spec.model not in EXPORTABLE:
            # The catalog lists a local model this build bundles no weights for.
            refuse(EmbeddingModelNotServedError, spec, f"no bundled weights for local model {spec.model!r}")
        self.spec = spec
        self.max_input_tokens = catalog_model.max_input_tokens
        self._model = model

    @property
    def model(self) -> OnnxSentenceEncoder:
        if self._model is not None:
            return self._model
        try:
            return local_model(self.spec.model)
        except (ImportError, OSError, ValueError) as exc:
            # FileNotFoundError included: the detail (in the log) says to run `sluice model export`.
            refuse(EmbeddingModelNotServedError, self.spec, f"the local model could not be loaded: {exc}", exc)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        # Normalised in the graph, so cosine distance and inner product rank alike, as Titan's do.
        matrix = self.model.encode(texts)
        if matrix.ndim != 2 or matrix.shape[1] != self.spec.dim:
            refuse(EmbeddingResponseError, self.spec, f"local model produced shape {matrix.shape}")
        vectors: list[list[float]] = matrix.tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
