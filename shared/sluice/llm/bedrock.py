"""Chat completions from Amazon Bedrock's Converse API through an injected ``bedrock-runtime`` client.

Converse takes the same message shape for every model Bedrock serves, so the configured model id
(or inference profile) is all that changes; IAM scopes the function to that model's ARN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import (
    ClientError,
    ConnectionError,
    CredentialRetrievalError,
    HTTPClientError,
    NoCredentialsError,
    PartialCredentialsError,
)

from sluice import retry
from sluice.errors import (
    ChatModelAuthenticationError,
    ChatModelError,
    ChatModelRateLimitedError,
    ChatModelRefusedError,
    ChatModelResponseError,
    ChatModelUnavailableError,
)
from sluice.llm.openai import DEFAULT_RETRY
from sluice.llm.protocol import Completion, Image
from sluice.llm.refusal import failure_of, give_up_as, log_retry, refuse
from sluice.retry import RetryPolicy

_AUTH = frozenset({"AccessDeniedException", "UnrecognizedClientException", "InvalidSignatureException",
                   "ExpiredTokenException", "MissingAuthenticationTokenException"})
_THROTTLE = frozenset({"ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException"})
_UNAVAILABLE = frozenset({"ServiceUnavailableException", "ModelTimeoutException", "ModelNotReadyException",
                          "InternalServerException", "InternalFailure"})


class BedrockChatModel:
    provider = "bedrock"

    def __init__(self, model: str, *, client: Any, retry: RetryPolicy | None = None) -> None:
        self.model = model
        self._client = client
        self._retry = retry or DEFAULT_RETRY

    def complete(self, system: str, prompt: str, *, max_tokens: int, images: Sequence[Image] = ()) -> Completion:
        content: list[dict[str, Any]] = [{"text": prompt}]
        content += [{"image": {"format": image.format, "source": {"bytes": image.data}}} for image in images]
        def send(t: retry.Try) -> Completion:
            response = self._client.converse(
                modelId=self.model,
                system=[{"text": system}],
                messages=[{"role": "user", "content": content}],
                inferenceConfig={"maxTokens": max_tokens, "temperature": 0},
            )
            return self._completion(response, t.number)

        return retry.call(self._retry, send, self._classify, give_up_as(self.provider, self.model),
                          on_retry=log_retry(self.provider, self.model))

    def _classify(self, exc: Exception, t: retry.Try) -> retry.Failure | None:
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            return failure_of(_failure_for(str(error.get("Code", ""))),
                              f"converse refused: {error.get('Code')}: {error.get('Message')}", exc)
        if isinstance(exc, HTTPClientError | ConnectionError):
            return failure_of(ChatModelUnavailableError, "converse did not answer", exc)
        if isinstance(exc, NoCredentialsError | PartialCredentialsError | CredentialRetrievalError):
            refuse(ChatModelAuthenticationError, self.provider, self.model, "no AWS credentials", exc,
                   attempts=t.number)
        return None

    def _completion(self, response: Any, attempts: int) -> Completion:
        try:
            blocks = response["output"]["message"]["content"]
            text = "".join(str(b["text"]) for b in blocks if isinstance(b, dict) and "text" in b)
        except (KeyError, TypeError) as exc:
            refuse(ChatModelResponseError, self.provider, self.model, "the answer holds no message", exc,
                   attempts=attempts)
        return Completion(text=text.strip(), truncated=response.get("stopReason") == "max_tokens")


def _failure_for(code: str) -> type[ChatModelError]:
    if code in _AUTH:
        return ChatModelAuthenticationError
    if code in _THROTTLE:
        return ChatModelRateLimitedError
    if code in _UNAVAILABLE:
        return ChatModelUnavailableError
    return ChatModelRefusedError
