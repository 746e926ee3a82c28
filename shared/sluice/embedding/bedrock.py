"""Amazon Titan Text Embeddings v2 through an injected ``bedrock-runtime`` client.

Titan v2's InvokeModel takes one text per call, so a document's chunks are
sent a few at a time from a small thread pool (boto3 clients are thread-safe).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
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
from sluice.embedding.catalog import CatalogModel
from sluice.embedding.protocol import EmbeddingSpec
from sluice.embedding.refusal import failure_of, give_up_as, log_retry, refuse, rejected_request
from sluice.errors import (
    EmbeddingAuthenticationError,
    EmbeddingCallError,
    EmbeddingModelNotServedError,
    EmbeddingProviderError,
    EmbeddingRateLimitedError,
    EmbeddingResponseError,
)
from sluice.retry import RetryPolicy

logger = logging.getLogger("sluice.embedding")

TITAN_V2 = "amazon.titan-embed-text-v2:0"
DEFAULT_CONCURRENCY = 4

_AUTH_CODES = frozenset(
    {
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ExpiredTokenException",
        "MissingAuthenticationTokenException",
    }
)
_THROTTLE_CODES = frozenset(
    {"ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException"}
)
_UNAVAILABLE_CODES = frozenset(
    {
        "ServiceUnavailableException",
        "ModelTimeoutException",
        "ModelNotReadyException",
        "InternalServerException",
        "InternalFailure",
    }
)


class BedrockEmbedder:
    def __init__(
        self,
        spec: EmbeddingSpec,
        catalog_model: CatalogModel,
        *,
        client: Any,
        retry: RetryPolicy | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        if not spec.model.startswith("amazon.titan-embed-text-v2"):
            # The request body below is Titan v2's; another Bedrock model needs its own.
            refuse(EmbeddingModelNotServedError, spec, f"no request format for Bedrock model {spec.model!r}")
        self.spec = spec
        self.max_input_tokens = catalog_model.max_input_tokens
        self._client = client
        self._retry = retry or RetryPolicy()
        self._concurrency = max(1, concurrency)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        if self._concurrency == 1 or len(texts) == 1:
            return [self._embed_one(text) for text in texts]
        stop = threading.Event()

        def embed(text: str) -> list[float]:
            # Once one text has failed the document fails; the rest need not be paid for.
            if stop.is_set():
                return []
            try:
                return self._embed_one(text)
            except BaseException:
                stop.set()
                raise

        pool = ThreadPoolExecutor(max_workers=min(self._concurrency, len(texts)))
        try:
            return list(pool.map(embed, texts))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def embed_query(self, text: str) -> list[float]:
        return self._embed_one(text)

    def _embed_one(self, text: str) -> list[float]:
        body = json.dumps({"inputText": text, "dimensions": self.spec.dim, "normalize": True})
        def send(t: retry.Try) -> list[float]:
            response = self._client.invoke_model(
                modelId=self.spec.model,
                body=body,
                contentType="application/json",
                accept="application/json",
            )
            payload = json.loads(response["body"].read())  # not JSON: refused by _classify
            return self._vector(payload, t.number)

        return retry.call(self._retry, send, self._classify, give_up_as(self.spec), on_retry=log_retry(self.spec))

    def _classify(self, exc: Exception, t: retry.Try) -> retry.Failure | None:
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            return failure_of(self._failure_for(str(error.get("Code", "")), str(error.get("Message", ""))),
                              f"invoke_model refused: {error.get('Code')}: {error.get('Message')}", exc)
        if isinstance(exc, HTTPClientError | ConnectionError):
            return failure_of(EmbeddingProviderError, "invoke_model did not answer", exc)
        if isinstance(exc, NoCredentialsError | PartialCredentialsError | CredentialRetrievalError):
            refuse(EmbeddingAuthenticationError, self.spec, "no AWS credentials", exc, attempts=t.number)
        if isinstance(exc, ValueError | KeyError | TypeError):
            refuse(EmbeddingResponseError, self.spec, "the answer is not JSON", exc, attempts=t.number)
        return None

    @staticmethod
    def _failure_for(code: str, message: str) -> type[EmbeddingCallError]:
        if code in _AUTH_CODES:
            return EmbeddingAuthenticationError
        if code in _THROTTLE_CODES:
            return EmbeddingRateLimitedError
        if code in _UNAVAILABLE_CODES:
            return EmbeddingProviderError
        if code == "ResourceNotFoundException":
            return EmbeddingModelNotServedError
        if code == "ValidationException":
            # Titan answers both "model identifier is invalid" and "Too many input tokens" this way.
            return rejected_request(message)
        return EmbeddingProviderError

    def _vector(self, payload: Any, attempts: int) -> list[float]:
        embedding = payload.get("embedding") if isinstance(payload, dict) else None
        if not isinstance(embedding, list):
            refuse(EmbeddingResponseError, self.spec, "the answer holds no embedding", attempts=attempts)
        if len(embedding) != self.spec.dim:
            refuse(
                EmbeddingResponseError,
                self.spec,
                f"vector width {len(embedding)}, the collection stores {self.spec.dim}",
                attempts=attempts,
            )
        try:
            return [float(x) for x in embedding]
        except (TypeError, ValueError) as exc:
            refuse(
                EmbeddingResponseError, self.spec, "the embedding holds a non-number", exc, attempts=attempts
            )
