"""The chat-model catalog: which models each provider serves and which of them read images (R-PARSE-6).

The canonical file is ``infra/catalog/chat_models.json``, beside the embedding catalog and found
the same way (next to whichever embedding catalog this process reads: the repository's, the
layer's package data, or ``$SLUICE_CATALOG_PATH``'s folder). A collection's image-description
model must be listed here with ``vision``: an unknown model, or one that reads text only, is
refused with the field named (``GET /rag/vision-models`` lists those a collection may choose).
Each vision model says the largest image it takes (longest side in pixels, bytes): images are
downscaled to that before they are sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sluice.embedding.catalog import catalog_path, load_cached, parse_models

CHAT_CATALOG_FILENAME = "chat_models.json"
CHAT_PROVIDERS = ("openai", "bedrock")
# Below this an image holds too little for a model to describe; above it no provider takes one.
_MIN_SIDE, _MAX_SIDE = 256, 8000


@dataclass(frozen=True)
class ChatCatalogModel:
    provider: str
    model: str
    vision: bool
    max_image_side: int = 1568
    max_image_bytes: int = 3_750_000
    description: str = ""


def chat_catalog_path() -> Path:
    return catalog_path().parent / CHAT_CATALOG_FILENAME


def load_chat_catalog(path: Path | None = None) -> list[ChatCatalogModel]:
    return load_cached(Path(path) if path is not None else chat_catalog_path(), _parse)


def vision_models() -> list[ChatCatalogModel]:
    return [m for m in load_chat_catalog() if m.vision]


def _build(entry: dict[str, Any]) -> ChatCatalogModel:
    return ChatCatalogModel(
        provider=str(entry["provider"]), model=str(entry["model"]), vision=bool(entry["vision"]),
        max_image_side=int(entry.get("max_image_side", 1568)),
        max_image_bytes=int(entry.get("max_image_bytes", 3_750_000)),
        description=str(entry.get("description", "")),
    )


def _check(model: ChatCatalogModel) -> str | None:
    if model.provider not in CHAT_PROVIDERS:
        return f"unknown provider {model.provider!r}"
    if not _MIN_SIDE <= model.max_image_side <= _MAX_SIDE or model.max_image_bytes < 10_000:
        return f"max_image_side must be {_MIN_SIDE}..{_MAX_SIDE} and max_image_bytes at least 10,000"
    return None


def _parse(raw: object, path: Path) -> tuple[ChatCatalogModel, ...]:
    return parse_models(raw, path, _build, _check)


def find_chat_model(provider: str, model: str) -> ChatCatalogModel | None:
    return next((m for m in load_chat_catalog() if m.provider == provider and m.model == model), None)
