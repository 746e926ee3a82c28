"""Titan Text Embeddings v2 through a real bedrock-runtime client, answers stubbed by botocore's Stubber."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from sluice.embedding import EmbeddingSpec, build_embedder, clear_embedder_cache, find_model
from sluice.embedding.bedrock import TITAN_V2, BedrockEmbedder
from sluice.errors import (
    EmbeddingAuthenticationError,
    EmbeddingInputRejectedError,
    EmbeddingModelNotServedError,
    EmbeddingProviderError,
    EmbeddingRateLimitedError,
    EmbeddingResponseError,
)
from sluice.retry import RetryPolicy


@pytest.fixture
def client() -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def titan_answer(vector: list[float]) -> dict[str, Any]:
    raw = json.dumps({"embedding": vector, "inputTextTokenCount": 5}).encode()
    return {"body": StreamingBody(io.BytesIO(raw), len(raw)), "contentType": "application/json"}


def titan_request(text: str, dim: int) -> dict[str, Any]:
    return {
        "modelId": TITAN_V2,
        "body": json.dumps({"inputText": text, "dimensions": dim, "normalize": True}),
        "contentType": "application/json",
        "accept": "application/json",
    }


def make_embedder(client: Any, dim: int = 256, **options: Any) -> BedrockEmbedder:
    options.setdefault("retry", RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, total_seconds=5))
    options.setdefault("concurrency", 1)
    spec = EmbeddingSpec("bedrock", TITAN_V2, dim)
    return BedrockEmbedder(spec, find_model("bedrock", TITAN_V2, dim), client=client, **options)


@pytest.mark.parametrize("dim", [256, 512, 1024])
def test_each_text_is_one_call_at_the_collection_width(client, stubber, dim):
    # GIVEN Titan answering a vector per text at the width asked for
    for i, text in enumerate(["first chunk", "second chunk"]):
        stubber.add_response("invoke_model", titan_answer([float(i)] * dim), titan_request(text, dim))

    # WHEN two texts are embedded
    vectors = make_embedder(client, dim).embed_documents(["first chunk", "second chunk"])

    # THEN each went alone with dimensions and normalize set, and came back in order
    assert vectors == [[0.0] * dim, [1.0] * dim]


def test_throttling_is_retried_and_then_succeeds(client, stubber):
    sleeps: list[float] = []
    stubber.add_client_error("invoke_model", "ThrottlingException", "Too many requests", 429)
    stubber.add_client_error("invoke_model", "ServiceUnavailableException", "Service unavailable", 503)
    stubber.add_response("invoke_model", titan_answer([0.5] * 256), titan_request("q", 256))
    embedder = make_embedder(client, retry=RetryPolicy(max_attempts=3, base_delay=0.01, sleep=sleeps.append))

    assert embedder.embed_query("q") == [0.5] * 256
    assert len(sleeps) == 2


def test_throttling_that_never_ends_is_a_rate_limit_refusal(client, stubber):
    for _ in range(3):
        stubber.add_client_error("invoke_model", "ThrottlingException", "Rate exceeded", 429)

    with pytest.raises(EmbeddingRateLimitedError) as refused:
        make_embedder(client).embed_documents(["a"])
    assert refused.value.transient


def test_a_model_timeout_that_persists_is_a_provider_error(client, stubber):
    for _ in range(3):
        stubber.add_client_error("invoke_model", "ModelTimeoutException", "Model timed out", 408)

    with pytest.raises(EmbeddingProviderError):
        make_embedder(client).embed_documents(["a"])


def test_access_denied_fails_the_document_with_the_credential_summary(client, stubber, caplog):
    account_detail = "User: arn:aws:sts::123456789012:assumed-role/embed-fn is not authorized"
    stubber.add_client_error("invoke_model", "AccessDeniedException", account_detail, 403)

    with (
        caplog.at_level(logging.ERROR, logger="sluice.embedding"),
        pytest.raises(EmbeddingAuthenticationError) as refused,
    ):
        make_embedder(client).embed_documents(["a", "b"])

    summary = refused.value.summary()
    assert summary.startswith(
        "The document could not be indexed (AuthenticationError) - check the collection's"
    )
    for text in (summary, str(refused.value), json.dumps(refused.value.body())):
        assert "arn:aws" not in text and "123456789012" not in text and "bedrock-runtime" not in text
    assert any("123456789012" in r.getMessage() and r.exc_info for r in caplog.records)


@pytest.mark.parametrize(
    ("code", "message", "failure"),
    [
        (
            "ValidationException",
            "400 Bad Request: Too many input tokens. Max input tokens: 8192",
            EmbeddingInputRejectedError,
        ),
        ("ValidationException", "The provided model identifier is invalid.", EmbeddingModelNotServedError),
        ("ResourceNotFoundException", "Could not resolve the foundation model", EmbeddingModelNotServedError),
    ],
)
def test_a_refusal_is_classified_without_retrying(client, stubber, code, message, failure):
    stubber.add_client_error("invoke_model", code, message, 400)
    with pytest.raises(failure):
        make_embedder(client).embed_documents(["a"])


def test_a_vector_of_another_width_is_refused(client, stubber):
    stubber.add_response("invoke_model", titan_answer([0.1] * 1024), titan_request("a", 256))
    with pytest.raises(EmbeddingResponseError):
        make_embedder(client).embed_documents(["a"])


def test_build_embedder_uses_the_injected_client_and_caches(client, stubber):
    clear_embedder_cache()
    spec = EmbeddingSpec("bedrock", TITAN_V2, 512)
    stubber.add_response("invoke_model", titan_answer([0.25] * 512), titan_request("hello", 512))

    embedder = build_embedder(spec, bedrock_client=client)

    assert build_embedder(spec, bedrock_client=client) is embedder
    assert embedder.max_input_tokens == 8192
    assert embedder.embed_query("hello") == [0.25] * 512
    with pytest.raises(ValueError, match="bedrock-runtime client"):
        build_embedder(spec)


class FakeTitan:
    """An in-memory bedrock-runtime: a vector derived from the text.

    With ``together``, the first ``together`` calls wait at a barrier until that many are in flight at
    once (a call that never gets company breaks it, and the embedding fails), and the first call
    answers only after the last of them has: answers come back out of order."""

    def __init__(self, together: int | None = None) -> None:
        self.in_flight = 0
        self.most_in_flight = 0
        self.calls = 0
        self.lock = threading.Lock()
        self.together = together
        self.barrier = threading.Barrier(together, timeout=10) if together else None
        self.last_of_group_answered = threading.Event()

    def invoke_model(self, *, modelId: str, body: str, contentType: str, accept: str) -> dict[str, Any]:
        request = json.loads(body)
        with self.lock:
            self.calls += 1
            call = self.calls
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.barrier is not None and call <= self.barrier.parties:
                self.barrier.wait()
                if call == 1:
                    assert self.last_of_group_answered.wait(10)
        finally:
            with self.lock:
                self.in_flight -= 1
        if call == self.together:
            self.last_of_group_answered.set()
        if request["inputText"] == "poison":
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "InvokeModel")
        return titan_answer([float(len(request["inputText"]))] * request["dimensions"])


def test_texts_go_concurrently_and_come_back_in_order():
    titan = FakeTitan(together=4)
    texts = ["x" * n for n in range(1, 21)]

    vectors = make_embedder(titan, concurrency=4).embed_documents(texts)

    assert [v[0] for v in vectors] == [float(n) for n in range(1, 21)]
    assert titan.most_in_flight == 4 and titan.calls == 20


def test_one_refused_text_fails_the_whole_call():
    with pytest.raises(EmbeddingAuthenticationError):
        make_embedder(FakeTitan(), concurrency=4).embed_documents(["a", "b", "poison", "c", "d", "e"])
