"""What every chat model offers: one system instruction and one user message in, text out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Completion:
    text: str
    # The provider stopped at max_tokens rather than where the model finished.
    truncated: bool = False


@runtime_checkable
class ChatModel(Protocol):
    provider: str
    model: str

    def complete(self, system: str, prompt: str, *, max_tokens: int) -> Completion:
        """The model's answer to ``prompt`` under ``system``, at most ``max_tokens`` long."""
        ...
