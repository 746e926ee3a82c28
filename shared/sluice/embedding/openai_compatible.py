"""Embeddings from any OpenAI-compatible ``POST {base_url}/embeddings`` (OpenAI, Ollama, vLLM, TEI…)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

import httpx

from sluice import retry
from sluice.embedding.catalog import CatalogModel
from sluice.embedding.endpoints import EndpointNotAllowed
from sluice.embedding.protocol import EmbeddingSpec, SecretReader
from sluice.embedding.refusal import failure_of, give_up_as, log_retry, refuse, rejected_request
from sluice.embedding.secrets import api_key_from_secret
from sluice.errors import (
    EmbeddingAuthenticationError,
    EmbeddingCallError,
    EmbeddingCredentialMissingError,
    EmbeddingEndpointRefusedError,
    EmbeddingModelNotServedError,
    EmbeddingProviderError,
    EmbeddingRateLimitedError,
    EmbeddingResponseError,
)
from sluice.retry import Deadline, RetryPolicy, parse_retry_after

logger = logging.getLogger("sluice.embedding")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Read is generous: a CPU-only Ollama can take tens of seconds over a full batch.
DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=60.0, write=30.0, pool=5.0)
# Bounds one request's body whatever the batch size: providers cap tokens per
# request (OpenAI ~300k) and small self-hosted servers choke well before that.
MAX_REQUEST_CHARS = 100_000
_BODY_LOG_CHARS = 1000


class OpenAICompatibleEmbedder:
    def __init__(
        self,
        spec: EmbeddingSpec,
        catalog_model: CatalogModel,
        *,
        http_client: httpx.Client,
        secrets: SecretReader | None = None,
        batch_size: int = 64,
        max_request_chars: int = MAX_REQUEST_CHARS,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
    ) -> None:
        if batch_size < 1 or max_request_chars < 1:
            raise ValueError("batch_size and max_request_chars must be positive")
        self.spec = spec
        self.max_input_tokens = catalog_model.max_input_tokens
        self._send_dimensions = catalog_model.accepts_dimensions
        self._client = http_client
        self._secrets = secrets
        self._batch_size = batch_size
        self._max_request_chars = max_request_chars
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._url = (spec.base_url or DEFAULT_BASE_URL).rstrip("/") + "/embeddings"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        # The key is read once per call, not per batch; the reader caches across calls.
        headers = self._headers()
        vectors: list[list[float]] = []
        for batch in self._batches(texts):
            vectors.extend(self._embed_batch(batch, headers))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    def _batches(self, texts: Sequence[str]) -> Iterator[list[str]]:
        batch: list[str] = []
        chars = 0
        for text in texts:
            if batch and (len(batch) >= self._batch_size or chars + len(text) > self._max_request_chars):
                yield batch
                batch, chars = [], 0
            # A single text over the character bound still goes alone: the
            # provider, not this client, decides whether it fits the model.
            batch.append(text)
            chars += len(text)
        if batch:
            yield batch

    def _headers(self) -> dict[str, str]:
        secret_id = self.spec.secret_id
        if not secret_id:
            # Keyless endpoints (an Ollama on the deployment's own network) are legitimate.
            return {}
        if self._secrets is None:
            refuse(EmbeddingCredentialMissingError, self.spec, "no secret reader was given to the embedder")
        try:
            key = api_key_from_secret(self._secrets.get_secret(secret_id))
        except Exception as exc:
            # A missing, unreadable or malformed secret is one refusal, whatever the reader raised.
            refuse(EmbeddingCredentialMissingError, self.spec, f"reading secret {secret_id!r} failed", exc)
        return {"Authorization": f"Bearer {key}"}

    def _embed_batch(self, batch: list[str], headers: dict[str, str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.spec.model, "input": batch}
        if self._send_dimensions:
            body["dimensions"] = self.spec.dim
        def send(t: retry.Try) -> list[list[float]]:
            response = self._client.post(
                self._url, json=body, headers=headers, timeout=self._timeout_within(t.deadline)
            )
            if not response.is_success:
                raise _status_error(response)
            return self._vectors(response, len(batch), t.number)

        return retry.call(self._retry, send, self._classify, give_up_as(self.spec),
                          on_retry=log_retry(self.spec))

    def _classify(self, exc: Exception, t: retry.Try) -> retry.Failure | None:
        if isinstance(exc, EndpointNotAllowed):
            # The client's guard: the endpoint's name now points inside the network.
            refuse(EmbeddingEndpointRefusedError, self.spec, f"POST {self._url} refused", exc)
        if isinstance(exc, httpx.TimeoutException):
            return failure_of(EmbeddingProviderError, f"POST {self._url} timed out", exc)
        if isinstance(exc, httpx.UnsupportedProtocol):
            refuse(EmbeddingModelNotServedError, self.spec, f"bad endpoint {self._url}", exc)
        if isinstance(exc, httpx.TransportError):
            return failure_of(EmbeddingProviderError, f"POST {self._url} failed", exc)
        if isinstance(exc, httpx.HTTPStatusError):
            response = exc.response
            return failure_of(
                self._failure_for(response),
                f"POST {self._url} answered {response.status_code}: {response.text[:_BODY_LOG_CHARS]!r}",
                exc, parse_retry_after(response.headers),
            )
        return None

    def _failure_for(self, response: httpx.Response) -> type[EmbeddingCallError]:
        status = response.status_code
        if status in (401, 402, 403):
            # A refused key may have been rotated since it was cached.
            forget = getattr(self._secrets, "forget", None)
            if forget is not None and self.spec.secret_id:
                forget(self.spec.secret_id)
            return EmbeddingAuthenticationError
        if status == 429:
            return EmbeddingRateLimitedError
        if status == 404:
            return EmbeddingModelNotServedError
        if status in (400, 413, 422):
            return rejected_request(response.text)
        if status >= 500 or status in (408, 409, 425):
            return EmbeddingProviderError
        # Redirects and the remaining 4xx (405 and the like) mean the address is not an
        # embeddings endpoint; retrying would only repeat the answer.
        return EmbeddingModelNotServedError

    def _timeout_within(self, deadline: Deadline) -> httpx.Timeout:
        # The last attempt may not outlive the call's total bound.
        left = max(0.01, deadline.remaining())
        t = self._timeout
        return httpx.Timeout(
            connect=_at_most(t.connect, left),
            read=_at_most(t.read, left),
            write=_at_most(t.write, left),
            pool=_at_most(t.pool, left),
        )

    def _vectors(self, response: httpx.Response, expected: int, attempts: int) -> list[list[float]]:
        def malformed(why: str, cause: Exception | None = None) -> NoReturn:
            refuse(EmbeddingResponseError, self.spec, f"POST {self._url}: {why}", cause, attempts=attempts)

        try:
            data = response.json()["data"]
        except (ValueError, KeyError, TypeError) as exc:
            malformed("the body is not an embeddings list", exc)
        if not isinstance(data, list) or len(data) != expected:
            got = len(data) if isinstance(data, list) else type(data).__name__
            malformed(f"expected {expected} embeddings, got {got}")
        vectors: list[list[float] | None] = [None] * expected
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                malformed(f"item {position} is not an object")
            # Servers that omit the index answer in input order.
            index = item.get("index", position)
            if not isinstance(index, int) or not 0 <= index < expected or vectors[index] is not None:
                malformed(f"item {position} has a bad or repeated index {index!r}")
            embedding = item.get("embedding")
            if not isinstance(embedding, list):
                malformed(f"item {position} has no float embedding")
            if len(embedding) != self.spec.dim:
                malformed(f"vector width {len(embedding)}, the collection stores {self.spec.dim}")
            try:
                vectors[index] = [float(x) for x in embedding]
            except (TypeError, ValueError) as exc:
                malformed(f"item {position} holds a non-number", exc)
        return [v for v in vectors if v is not None]


def _at_most(value: float | None, ceiling: float) -> float:
    return ceiling if value is None else min(value, ceiling)


def _status_error(response: httpx.Response) -> httpx.HTTPStatusError:
    # Built rather than raised so the log's traceback names the status and endpoint.
    return httpx.HTTPStatusError(
        f"{response.status_code} from {response.request.url}", request=response.request, response=response
    )
