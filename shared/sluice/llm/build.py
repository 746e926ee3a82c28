"""The deployment's chat model from its settings, served by the clients the caller built."""

from __future__ import annotations

from typing import Any

import httpx

from sluice.config import Settings
from sluice.embedding.endpoints import NOT_HTTP, deployment_policy, guarded_http_client, http_host
from sluice.embedding.protocol import SecretReader
from sluice.llm.bedrock import BedrockChatModel
from sluice.llm.openai import DEFAULT_TIMEOUT, OpenAIChatModel
from sluice.llm.protocol import ChatModel


class ChatModelSettingError(ValueError):
    """The deployment's chat-model settings cannot work (a missing model name, a base URL that is no URL)."""


def build_chat_model(settings: Settings, *, secrets: SecretReader | None = None, bedrock_client: Any = None,
                     http_client: httpx.Client | None = None) -> ChatModel | None:
    """``None`` for CHAT_MODEL_PROVIDER=none; otherwise the configured model.

    The endpoint is reached through the embedders' guarded client: CHAT_MODEL_BASE_URL must
    resolve to a public address unless EMBEDDING_ALLOWED_ENDPOINTS allows it (a self-hosted
    model on the deployment's own network), checked where the connection is made.
    """
    provider = settings.chat_model_provider
    if provider == "none":
        return None
    if not settings.chat_model:
        raise ChatModelSettingError(f"CHAT_MODEL_PROVIDER={provider} needs CHAT_MODEL (the model's name or id)")
    if provider == "bedrock":
        if bedrock_client is None:
            raise ValueError("a bedrock chat model needs a bedrock-runtime client")
        return BedrockChatModel(settings.chat_model, client=bedrock_client)
    base_url = settings.chat_model_base_url or None
    if base_url is not None and http_host(base_url) is None:
        raise ChatModelSettingError(f"CHAT_MODEL_BASE_URL: {NOT_HTTP}")
    return OpenAIChatModel(
        settings.chat_model, base_url=base_url,
        http_client=http_client or guarded_http_client(deployment_policy(), timeout=DEFAULT_TIMEOUT),
        secret_id=settings.chat_model_secret_id or None, secrets=secrets,
    )
