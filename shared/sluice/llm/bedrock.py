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

from sluice.embedding.backoff import Deadline, RetryPolicy
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
from sluice.llm.refusal import refuse, wait_before_retry

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
        deadline = Deadline(self._retry)
        attempt = 0
        while True:
            attempt += 1
            failure: type[ChatModelError]
            cause: Exception
            try:
                response = self._client.converse(
                    modelId=self.model,
                    system=[{"text": system}],
                    messages=[{"role": "user", "content": content}],
                    inferenceConfig={"maxTokens": max_tokens, "temperature": 0},
                )
            except ClientError as exc:
                error = exc.response.get("Error", {})
                failure = _failure_for(str(error.get("Code", "")))
                cause, detail = exc, f"converse refused: {error.get('Code')}: {error.get('Message')}"
            except (HTTPClientError, ConnectionError) as exc:
                failure, cause, detail = ChatModelUnavailableError, exc, "converse did not answer"
            except (NoCredentialsError, PartialCredentialsError, CredentialRetrievalError) as exc:
                refuse(ChatModelAuthenticationError, self.provider, self.model, "no AWS credentials", exc,
                       attempts=attempt)
            else:
                return self._completion(response, attempt)
            wait_before_retry(self._retry, deadline, self.provider, self.model, failure, detail, cause,
                              attempt=attempt)

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
