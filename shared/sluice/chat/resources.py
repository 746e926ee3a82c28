"""What the chat services need, built by the composition root (sluice.wiring.chat_resources).

The embedder, the tokenizer and the chat model are built on first use: a route that
lists conversations never loads a model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sluice.config import ChatContextSettings
from sluice.db.connection import UnitOfWork
from sluice.embedding import Embedder, EmbeddingSpec
from sluice.embedding.tokens import TokenCounter
from sluice.ingest.uploads import Intake
from sluice.llm import ChatModel
from sluice.parsing import ParseBudget
from sluice.storage import ObjectStore

# Attachments are embedded with the bundled model whatever the bases use: the chunks table holds
# its 384 dimensions (migration 0008), and a conversation has no base to take a model from.
ATTACHMENT_EMBEDDING = EmbeddingSpec("local", "all-MiniLM-L6-v2", 384)


@dataclass
class ChatResources:
    uow: UnitOfWork
    store: ObjectStore
    settings: ChatContextSettings
    embedder: Callable[[], Embedder]
    tokens: Callable[[], TokenCounter]
    chat_model: Callable[[], ChatModel | None]
    # Sends one job message to the chat queue (CHAT_QUEUE_URL).
    send_job: Callable[[dict[str, Any]], None]
    # The knowledge-base upload path, for registering an attachment into a base.
    intake: Callable[[], Intake] | None = None

    @property
    def budget(self) -> ParseBudget:
        return ParseBudget.from_settings(self.settings)
