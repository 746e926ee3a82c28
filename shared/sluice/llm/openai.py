"""Chat completions from any OpenAI-compatible ``POST {base_url}/chat/completions`` (OpenAI, Ollama,
vLLM, LM Studio…), over the embedding package's guarded HTTP client and with its retry policy."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import httpx

from sluice import retry
from sluice.embedding.endpoints import EndpointNotAllowed
from sluice.embedding.protocol import SecretReader
from sluice.embedding.secrets import api_key_from_secret
from sluice.errors import (
    ChatModelAuthenticationError,
    ChatModelError,
    ChatModelRateLimitedError,
    ChatModelRefusedError,
    ChatModelResponseError,
    ChatModelUnavailableError,
)
from sluice.llm.protocol import Completion, Image
from sluice.llm.refusal import failure_of, give_up_as, log_retry, refuse
from sluice.retry import Deadline, RetryPolicy, parse_retry_after

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# A summary of a few thousand tokens on a CPU-only server can take minutes; the retry policy's
# total bounds one call with its retries, and the worker keeps that much time in hand.
DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=240.0, write=30.0, pool=5.0)
DEFAULT_RETRY = RetryPolicy(total_seconds=300.0)
_BODY_LOG_CHARS = 1000


class OpenAIChatModel:
    provider = "openai"

    def __init__(self, model: str, *, http_client: httpx.Client, base_url: str | None = None,
                 secret_id: str | None = None, secrets: SecretReader | None = None,
                 timeout: httpx.Timeout = DEFAULT_TIMEOUT, retry: RetryPolicy | None = None) -> None:
        if secret_id and secrets is None:
            raise ValueError("a chat model naming a secret needs a SecretReader")
        self.model = model
        self._client = http_client
        self._url = (base_url or DEFAULT_BASE_URL).rstrip("/") + "/chat/completions"
        self._secret_id = secret_id
        self._secrets = secrets
        self._timeout = timeout
        self._retry = retry or DEFAULT_RETRY

    def _headers(self) -> dict[str, str]:
        if not self._secret_id:
            return {}  # a keyless server on the deployment's own network
        assert self._secrets is not None
        try:
            key = api_key_from_secret(self._secrets.get_secret(self._secret_id))
        except Exception as exc:
            refuse(ChatModelAuthenticationError, self.provider, self.model,
                   f"reading secret {self._secret_id!r} failed", exc)
        return {"Authorization": f"Bearer {key}"}

    def complete(self, system: str, prompt: str, *, max_tokens: int, images: Sequence[Image] = ()) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": _content(prompt, images)}],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        headers = self._headers()
        def send(t: retry.Try) -> Completion:
            response = self._client.post(self._url, json=body, headers=headers,
                                         timeout=_within(self._timeout, t.deadline))
            if not response.is_success:
                raise httpx.HTTPStatusError(f"{response.status_code} from {response.request.url}",
                                            request=response.request, response=response)
            return self._completion(response, t.number)

        return retry.call(self._retry, send, self._classify, give_up_as(self.provider, self.model),
                          on_retry=log_retry(self.provider, self.model))

    def _classify(self, exc: Exception, t: retry.Try) -> retry.Failure | None:
        if isinstance(exc, EndpointNotAllowed):
            refuse(ChatModelRefusedError, self.provider, self.model, f"POST {self._url} refused", exc)
        if isinstance(exc, httpx.TimeoutException):
            return failure_of(ChatModelUnavailableError, f"POST {self._url} timed out", exc)
        if isinstance(exc, httpx.UnsupportedProtocol):
            refuse(ChatModelRefusedError, self.provider, self.model, f"bad endpoint {self._url}", exc)
        if isinstance(exc, httpx.TransportError):
            return failure_of(ChatModelUnavailableError, f"POST {self._url} failed", exc)
        if isinstance(exc, httpx.HTTPStatusError):
            response = exc.response
            return failure_of(
                self._failure_for(response.status_code),
                f"POST {self._url} answered {response.status_code}: {response.text[:_BODY_LOG_CHARS]!r}",
                exc, parse_retry_after(response.headers))
        return None

    def _failure_for(self, status: int) -> type[ChatModelError]:
        if status in (401, 402, 403):
            forget = getattr(self._secrets, "forget", None)
            if forget is not None and self._secret_id:
                forget(self._secret_id)  # a rotated key is read again next time
            return ChatModelAuthenticationError
        if status == 429:
            return ChatModelRateLimitedError
        if status >= 500 or status in (408, 409, 425):
            return ChatModelUnavailableError
        return ChatModelRefusedError

    def _completion(self, response: httpx.Response, attempts: int) -> Completion:
        try:
            choice = response.json()["choices"][0]
            text = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            refuse(ChatModelResponseError, self.provider, self.model,
                   f"POST {self._url}: the body is not a chat completion", exc, attempts=attempts)
        if not isinstance(text, str):
            refuse(ChatModelResponseError, self.provider, self.model,
                   f"POST {self._url}: the completion holds no text", attempts=attempts)
        return Completion(text=text.strip(), truncated=choice.get("finish_reason") == "length")


def _content(prompt: str, images: Sequence[Image]) -> str | list[dict[str, Any]]:
    """The user message's content: the text alone, or the text then each image as a data URL."""
    if not images:
        return prompt
    parts: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
    for image in images:
        url = f"data:{image.media_type};base64,{base64.b64encode(image.data).decode('ascii')}"
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _within(timeout: httpx.Timeout, deadline: Deadline) -> httpx.Timeout:
    left = max(0.01, deadline.remaining())

    def at_most(value: float | None) -> float:
        return left if value is None else min(value, left)

    return httpx.Timeout(connect=at_most(timeout.connect), read=at_most(timeout.read),
                         write=at_most(timeout.write), pool=at_most(timeout.pool))
