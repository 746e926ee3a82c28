"""Chunking: the settings a document is split with, and the splitters (R-CHUNK-1, R-CHUNK-2).

``config`` owns the collection config, the per-upload override and the plan
they resolve to against the embedder's window; ``splitting`` turns text into
located chunks; ``markdown`` finds the sections the markdown strategy splits at.
"""

from sluice.chunking.config import (
    CHARS_PER_TOKEN,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    MIN_CHUNK_SIZE,
    ChunkingPlan,
    IngestionConfig,
    IngestionOverride,
    max_chunk_chars,
    merge_override,
    parser_options,
    resolve_plan,
    validate_collection_config,
)
from sluice.chunking.splitting import Chunk, PageSpan, split_text

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_CHUNK_SIZE",
    "MIN_CHUNK_SIZE",
    "Chunk",
    "ChunkingPlan",
    "IngestionConfig",
    "IngestionOverride",
    "PageSpan",
    "max_chunk_chars",
    "merge_override",
    "parser_options",
    "resolve_plan",
    "split_text",
    "validate_collection_config",
]
