"""The deployment's chat model from its settings, served by the clients the caller built."""

from __future__ import annotations

from typing import Any

import httpx

from sluice.config import ChatModelSettings
from sluice.embedding.endpoints import NOT_HTTP, deployment_policy, guarded_http_client, http_host
from sluice.embedding.protocol import SecretReader
from sluice.llm.bedrock import BedrockChatModel
from sluice.llm.openai import DEFAULT_TIMEOUT, OpenAIChatModel
from sluice.llm.protocol import ChatModel
from sluice.retry import RetryPolicy


class ChatModelSettingError(ValueError):
    """The deployment's chat-model settings cannot work (a missing model name, a base URL that is no URL)."""


def build_chat_model(settings: ChatModelSettings, *, secrets: SecretReader | None = None, bedrock_client: Any = None,
                     http_client: httpx.Client | None = None) -> ChatModel | None:
    """``None`` for CHAT_MODEL_PROVIDER=none; otherwise the deployment's configured model."""
    provider = settings.chat_model_provider
    if provider == "none":
        return None
    if not settings.chat_model:
        raise ChatModelSettingError(f"CHAT_MODEL_PROVIDER={provider} needs CHAT_MODEL (the model's name or id)")
    base_url = settings.chat_model_base_url or None
    if provider == "openai" and base_url is not None and http_host(base_url) is None:
        raise ChatModelSettingError(f"CHAT_MODEL_BASE_URL: {NOT_HTTP}")
    return chat_model_for(provider, settings.chat_model, base_url=base_url,
                          secret_id=settings.chat_model_secret_id or None, secrets=secrets,
                          bedrock_client=bedrock_client, http_client=http_client)


def chat_model_for(provider: str, model: str, *, base_url: str | None = None, secret_id: str | None = None,
                   secrets: SecretReader | None = None, bedrock_client: Any = None,
                   http_client: httpx.Client | None = None, retry: RetryPolicy | None = None) -> ChatModel:
    """One chat model from plain values: the deployment's (above), or a choice stored elsewhere
    (a collection's image-description model), which its caller has validated and bound first.

    An ``openai`` endpoint is reached through the embedders' guarded client unless one is given:
    ``base_url`` must resolve to a public address unless EMBEDDING_ALLOWED_ENDPOINTS allows it (a
    self-hosted model on the deployment's own network), checked where the connection is made.
    ``retry`` replaces the default policy (a vision call gets less time than an overview's).
    """
    if provider == "bedrock":
        if bedrock_client is None:
            raise ValueError("a bedrock chat model needs a bedrock-runtime client")
        return BedrockChatModel(model, client=bedrock_client, retry=retry)
    if provider != "openai":
        raise ChatModelSettingError(f"unknown chat-model provider {provider!r} (openai or bedrock)")
    if base_url is not None and http_host(base_url) is None:
        raise ChatModelSettingError(NOT_HTTP)
    return OpenAIChatModel(
        model, base_url=base_url,
        http_client=http_client or guarded_http_client(deployment_policy(), timeout=DEFAULT_TIMEOUT),
        secret_id=secret_id, secrets=secrets, retry=retry,
    )
