"""Rerankers: a cross-encoder re-scores the search candidates against the query (R-SRCH-1).

One protocol, three choices, picked per deployment (``RERANKER_PROVIDER``):

* ``none`` (the default): no reranker; the results keep the weighted order and
  only the vector gate applies.
* ``http``: a ``POST {RERANKER_URL}/rerank`` endpoint in one of two dialects
  (``RERANKER_API``): ``cohere`` (Cohere, Jina, vLLM, Infinity: ``documents`` in,
  ``results[].relevance_score`` out) or ``tei`` (Hugging Face Text Embeddings
  Inference: ``texts`` in, ``[{index, score}]`` out).
* ``bedrock``: the Bedrock ``Rerank`` API through an injected
  ``bedrock-agent-runtime`` client (``RERANKER_MODEL`` is the model ARN).

Every reranker answers one score in 0..1 per text, in the order given, because
the 0.30 gate is a probability floor. A cross-encoder's raw output is a logit,
so a logit is passed through the sigmoid: TEI is always asked for raw scores
and given the sigmoid here (one code path, whatever the server's default), and
a Cohere-dialect server that returns logits is declared with
``RERANKER_SCORES=logits``. Bedrock and Cohere's own API return probabilities.

Why per deployment and not per collection: the reranker scores (query, text)
pairs in any embedding space, a multi-collection search needs one order across
collections, and its credential belongs to the operator, not to a base.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any, NoReturn, Protocol, runtime_checkable

import httpx

from sluice import retry
from sluice.config import RerankerSettings
from sluice.embedding.protocol import SecretReader
from sluice.embedding.secrets import api_key_from_secret
from sluice.errors import RerankerError
from sluice.retry import RetryPolicy, parse_retry_after

logger = logging.getLogger("sluice.rerank")

# A search is interactive: a reranker that has not answered in a few seconds is down.
DEFAULT_TIMEOUT = httpx.Timeout(connect=3.0, read=10.0, write=5.0, pool=3.0)
SEARCH_RETRY = RetryPolicy(max_attempts=3, base_delay=0.2, max_delay=1.0, total_seconds=12.0)
_BODY_LOG_CHARS = 500


@runtime_checkable
class Reranker(Protocol):
    name: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance in 0..1 per text, in the order given."""
        ...


def sigmoid(x: float) -> float:
    # Written for both signs so a large negative logit does not overflow exp().
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _ordered(scores_by_index: dict[int, float], n: int, where: str) -> list[float]:
    if sorted(scores_by_index) != list(range(n)):
        raise RerankerError(f"{where} answered {len(scores_by_index)} scores for {n} texts")
    return [scores_by_index[i] for i in range(n)]


class HttpReranker:
    """A ``/rerank`` endpoint over an injected ``httpx.Client``, in the Cohere or TEI dialect."""

    def __init__(self, base_url: str, *, http_client: httpx.Client, api: str = "cohere", model: str = "",
                 secrets: SecretReader | None = None, secret_id: str = "", logits: bool = False,
                 timeout: httpx.Timeout = DEFAULT_TIMEOUT, retry: RetryPolicy = SEARCH_RETRY) -> None:
        if api not in ("cohere", "tei"):
            raise ValueError(f"unknown reranker dialect {api!r}")
        base = base_url.rstrip("/")
        self._url = base if base.endswith("/rerank") else base + "/rerank"
        self._client = http_client
        self._api = api
        self._model = model
        self._secrets = secrets
        self._secret_id = secret_id
        # TEI is asked for raw logits below, so its scores always need the sigmoid.
        self._logits = logits or api == "tei"
        self._timeout = timeout
        self._retry = retry
        self.name = f"http:{api}"

    def _headers(self) -> dict[str, str]:
        if not self._secret_id:
            return {}
        if self._secrets is None:
            raise RerankerError("the reranker's credential cannot be read")
        try:
            key = api_key_from_secret(self._secrets.get_secret(self._secret_id))
        except Exception as exc:
            logger.error("reading the reranker secret failed: %s", exc)
            raise RerankerError("the reranker's credential cannot be read") from None
        return {"Authorization": f"Bearer {key}"}

    def _body(self, query: str, texts: Sequence[str]) -> dict[str, Any]:
        if self._api == "tei":
            return {"query": query, "texts": list(texts), "raw_scores": True, "truncate": True}
        body: dict[str, Any] = {"query": query, "documents": list(texts), "top_n": len(texts)}
        if self._model:
            body["model"] = self._model
        return body

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        body, headers = self._body(query, texts), self._headers()
        def send(t: retry.Try) -> list[float]:
            response = self._client.post(self._url, json=body, headers=headers, timeout=self._timeout)
            if not response.is_success:
                raise httpx.HTTPStatusError(str(response.status_code), request=response.request, response=response)
            return self._scores(response, len(texts))

        return retry.call(self._retry, send, self._classify, _give_up, on_retry=_log_retry)

    def _classify(self, exc: Exception, t: retry.Try) -> retry.Failure | None:
        if isinstance(exc, httpx.TransportError):
            return retry.Failure(None, True, f"POST {self._url} failed: {type(exc).__name__}: {exc}", exc)
        if isinstance(exc, httpx.HTTPStatusError):
            response = exc.response
            return retry.Failure(
                None, response.status_code == 429 or response.status_code >= 500,
                f"POST {self._url} answered {response.status_code}: {response.text[:_BODY_LOG_CHARS]!r}",
                exc, parse_retry_after(response.headers))
        return None

    def _scores(self, response: httpx.Response, n: int) -> list[float]:
        try:
            data = response.json()
            items = data["results"] if isinstance(data, dict) else data
            raw = {int(item["index"]): float(item.get("relevance_score", item.get("score")))
                   for item in items}
        except (ValueError, KeyError, TypeError) as exc:
            logger.error("rerank answer from %s is not a score list: %s", self._url, exc)
            raise RerankerError("the reranker answered something that is not a score list") from None
        scores = _ordered(raw, n, "the reranker")
        return [sigmoid(s) for s in scores] if self._logits else scores


class BedrockReranker:
    """The Bedrock ``Rerank`` API (Amazon Rerank, Cohere Rerank) via ``bedrock-agent-runtime``."""

    name = "bedrock"

    def __init__(self, model_arn: str, *, client: Any) -> None:
        if not model_arn:
            raise ValueError("a bedrock reranker needs RERANKER_MODEL (the model ARN)")
        self._model_arn = model_arn
        self._client = client

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        try:
            response = self._client.rerank(
                queries=[{"type": "TEXT", "textQuery": {"text": query}}],
                sources=[{"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": t}}}
                         for t in texts],
                rerankingConfiguration={
                    "type": "BEDROCK_RERANKING_MODEL",
                    "bedrockRerankingConfiguration": {
                        "numberOfResults": len(texts),
                        "modelConfiguration": {"modelArn": self._model_arn},
                    },
                },
            )
            raw = {int(r["index"]): float(r["relevanceScore"]) for r in response["results"]}
        except Exception as exc:  # botocore's ClientError and transport errors alike: logged, not echoed
            logger.error("bedrock rerank failed: %s: %s", type(exc).__name__, exc)
            raise RerankerError("the reranker failed or did not answer in time") from None
        # Bedrock answers relevance as a probability already.
        return _ordered(raw, len(texts), "the reranker")


def _give_up(failure: retry.Failure, attempts: int, detail: str) -> NoReturn:
    # The endpoint's URL and answer go to the log, never into the response (R-ERR-1).
    logger.error("rerank failed after %d attempt(s): %s", attempts, failure.detail)
    raise RerankerError("the reranker failed or did not answer in time")


def _log_retry(failure: retry.Failure, attempt: int, wait: float) -> None:
    logger.warning("rerank retried in %.2fs (attempt %d)", wait, attempt)


def build_reranker(settings: RerankerSettings, *, http_client: httpx.Client | None = None,
                   bedrock_agent_client: Any = None, secrets: SecretReader | None = None) -> Reranker | None:
    """The deployment's reranker, or ``None`` for ``none``."""
    if settings.reranker_provider == "none":
        return None
    if settings.reranker_provider == "http":
        if not settings.reranker_url:
            raise ValueError("RERANKER_PROVIDER=http needs RERANKER_URL")
        return HttpReranker(settings.reranker_url, http_client=http_client or httpx.Client(timeout=DEFAULT_TIMEOUT),
                            api=settings.reranker_api, model=settings.reranker_model, secrets=secrets,
                            secret_id=settings.reranker_secret_id, logits=settings.reranker_scores == "logits")
    if bedrock_agent_client is None:
        raise ValueError("a bedrock reranker needs a bedrock-agent-runtime client")
    return BedrockReranker(settings.reranker_model, client=bedrock_agent_client)
