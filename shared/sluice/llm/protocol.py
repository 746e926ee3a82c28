"""What every chat model offers: one system instruction and one user message (text, and optionally
images for a vision-capable model) in, text out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

# The image formats both providers take (OpenAI-compatible data URLs, Bedrock Converse image blocks).
ImageFormat = Literal["png", "jpeg", "gif", "webp"]


@dataclass(frozen=True)
class Image:
    """An image sent with the user message, already within the provider's size limit."""

    data: bytes
    format: ImageFormat = "png"

    @property
    def media_type(self) -> str:
        return f"image/{self.format}"


@dataclass(frozen=True)
class Completion:
    text: str
    # The provider stopped at max_tokens rather than where the model finished.
    truncated: bool = False


@runtime_checkable
class ChatModel(Protocol):
    provider: str
    model: str

    def complete(self, system: str, prompt: str, *, max_tokens: int, images: Sequence[Image] = ()) -> Completion:
        """The model's answer to ``prompt`` (and ``images``, after the text) under ``system``, at most
        ``max_tokens`` long."""
        ...
