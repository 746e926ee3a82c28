"""The OpenAI-compatible provider against a real HTTP server on loopback speaking the embeddings API."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sluice.embedding import EmbeddingSpec, build_embedder, clear_embedder_cache, find_model
from sluice.embedding.endpoints import EndpointPolicy, guarded_http_client
from sluice.embedding.openai_compatible import OpenAICompatibleEmbedder
from sluice.errors import (
    EmbeddingAuthenticationError,
    EmbeddingCallError,
    EmbeddingCredentialMissingError,
    EmbeddingEndpointRefusedError,
    EmbeddingInputRejectedError,
    EmbeddingModelNotServedError,
    EmbeddingProviderError,
    EmbeddingRateLimitedError,
    EmbeddingResponseError,
    ValidationError,
)
from sluice.retry import RetryPolicy
from tests.fakes import FakeOpenAI, Reply, serving, vector_for

API_KEY = "sk-test-0123456789abcdef"
SECRET_ID = "sluice/org-1/openai"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with serving(FakeOpenAI()) as srv:
        yield srv


@pytest.fixture(autouse=True)
def fresh_server(server: FakeOpenAI) -> None:
    server.script.clear()
    server.requests.clear()
    server.reverse_order = False
    server.width = None


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client() as client:
        yield client


class DictSecrets:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.reads: list[str] = []

    def get_secret(self, secret_id: str) -> str:
        self.reads.append(secret_id)
        return self.values[secret_id]


def quick_retry(**overrides: Any) -> RetryPolicy:
    return RetryPolicy(
        **{"max_attempts": 4, "base_delay": 0.01, "max_delay": 0.05, "total_seconds": 5.0, **overrides}
    )


def make_embedder(
    server: FakeOpenAI,
    http: httpx.Client,
    *,
    model: str = "text-embedding-3-small",
    dim: int = 256,
    secret_id: str | None = SECRET_ID,
    secrets: Any = None,
    **options: Any,
) -> OpenAICompatibleEmbedder:
    spec = EmbeddingSpec("openai", model, dim, base_url=server.base_url, secret_id=secret_id)
    options.setdefault("retry", quick_retry())
    if secrets is None:
        secrets = DictSecrets({SECRET_ID: json.dumps({"api_key": API_KEY})})
    return OpenAICompatibleEmbedder(
        spec, find_model("openai", model, dim), http_client=http, secrets=secrets, **options
    )


def assert_tells_nothing_of_the_provider(error: EmbeddingCallError, server: FakeOpenAI, *provider_words: str):
    port = str(server.server_address[1])
    for text in (str(error), error.summary(), json.dumps(error.body())):
        for secret in ("127.0.0.1", "localhost", port, "http", API_KEY, "sk-", SECRET_ID, *provider_words):
            assert secret not in text, (secret, text)


# --- the happy path ---------------------------------------------------------------------------


def test_texts_are_sent_in_batches_with_the_key_and_the_width(server, http):
    # GIVEN a batch size of 3 WHEN 7 texts are embedded
    embedder = make_embedder(server, http, batch_size=3)
    texts = [f"chunk number {i}" for i in range(7)]

    vectors = embedder.embed_documents(texts)

    # THEN three requests carried 3, 3 and 1 texts, each with the bearer key and the width
    assert [len(r["body"]["input"]) for r in server.requests] == [3, 3, 1]
    assert {r["path"] for r in server.requests} == {"/v1/embeddings"}
    assert {r["headers"]["Authorization"] for r in server.requests} == {f"Bearer {API_KEY}"}
    assert {r["body"]["dimensions"] for r in server.requests} == {256}
    assert {r["body"]["model"] for r in server.requests} == {"text-embedding-3-small"}
    assert vectors == [vector_for(t, 256) for t in texts]


def test_a_request_is_bounded_in_characters_as_well_as_in_texts(server, http):
    embedder = make_embedder(server, http, batch_size=64, max_request_chars=100)
    texts = ["x" * 40] * 5 + ["y" * 250]

    embedder.embed_documents(texts)

    # 40+40 fits 100, a third does not; an over-long text still goes, alone
    assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1, 1]


def test_vectors_follow_the_index_not_the_order_of_the_answer(server, http):
    server.reverse_order = True
    embedder = make_embedder(server, http)
    texts = ["alpha", "beta", "gamma", "delta"]

    assert embedder.embed_documents(texts) == [vector_for(t, 256) for t in texts]


def test_a_single_width_model_is_not_told_the_width_and_a_keyless_endpoint_gets_no_key(server, http):
    # GIVEN nomic-embed-text on an Ollama that needs no key
    embedder = make_embedder(server, http, model="nomic-embed-text", dim=768, secret_id=None)

    vector = embedder.embed_query("what is a sluice gate?")

    assert len(vector) == 768
    (request,) = server.requests
    assert "dimensions" not in request["body"]
    assert "Authorization" not in request["headers"]
    assert request["body"]["input"] == ["what is a sluice gate?"]


def test_a_plain_string_secret_is_the_key(server, http):
    embedder = make_embedder(server, http, secrets=DictSecrets({SECRET_ID: f"  {API_KEY}\n"}))
    embedder.embed_documents(["a"])
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {API_KEY}"


def test_nothing_to_embed_costs_no_request(server, http):
    assert make_embedder(server, http).embed_documents([]) == []
    assert server.requests == []


def test_build_embedder_serves_a_spec_once_per_process(server, http):
    clear_embedder_cache()
    secrets = DictSecrets({SECRET_ID: API_KEY})
    spec = EmbeddingSpec(
        "openai", "text-embedding-3-small", 512, base_url=server.base_url, secret_id=SECRET_ID
    )

    first = build_embedder(spec, secrets=secrets, http_client=http)
    again = build_embedder(spec, secrets=secrets, http_client=http)

    assert first is again
    assert first.max_input_tokens == 8191
    assert len(first.embed_query("hello")) == 512
    assert server.requests[0]["body"]["dimensions"] == 512


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (
            EmbeddingSpec("openai", "text-embedding-3-small", 1536, base_url="ftp://example.com"),
            "embedding_base_url",
        ),
        (EmbeddingSpec("openai", "text-embedding-3-small", 1536, base_url="/v1"), "embedding_base_url"),
        (EmbeddingSpec("openai", "text-embedding-4", 1536), "embedding_model"),
        (EmbeddingSpec("openai", "nomic-embed-text", 512), "embedding_dim"),
    ],
)
def test_build_embedder_refuses_a_spec_naming_the_field(http, spec, field):
    with pytest.raises(ValidationError) as refused:
        build_embedder(spec, http_client=http)
    assert list(refused.value.details["fields"]) == [field]


def test_a_spec_naming_a_key_needs_a_secret_reader(http):
    spec = EmbeddingSpec("openai", "text-embedding-3-small", 1536, secret_id=SECRET_ID)
    with pytest.raises(ValueError, match="SecretReader"):
        build_embedder(spec, http_client=http)


# --- retries ------------------------------------------------------------------------------------


def test_a_429_is_retried_after_the_wait_the_provider_asks_for(server, http):
    sleeps: list[float] = []
    server.script = [Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})]
    embedder = make_embedder(server, http, retry=quick_retry(sleep=sleeps.append))

    vectors = embedder.embed_documents(["a", "b"])

    assert vectors == [vector_for("a", 256), vector_for("b", 256)]
    assert len(server.requests) == 2
    assert sleeps == [0.0]


def test_retry_after_seconds_are_honoured(server, http):
    sleeps: list[float] = []
    server.script = [Reply(429, {}, {"Retry-After": "3"}), Reply(503, {}, {"retry-after-ms": "1500"})]
    embedder = make_embedder(server, http, retry=quick_retry(sleep=sleeps.append, total_seconds=30))

    embedder.embed_documents(["a"])

    assert 3.0 <= sleeps[0] <= 3.1
    assert 1.5 <= sleeps[1] <= 1.6


def test_a_retry_after_beyond_the_time_left_ends_the_call_at_once(server, http):
    sleeps: list[float] = []
    server.script = [Reply(429, {}, {"Retry-After": "3600"})]
    embedder = make_embedder(server, http, retry=quick_retry(sleep=sleeps.append))

    with pytest.raises(EmbeddingRateLimitedError) as refused:
        embedder.embed_documents(["a"])

    assert len(server.requests) == 1
    assert sleeps == []
    assert refused.value.transient


def test_rate_limiting_that_never_ends_is_refused_after_the_last_attempt(server, http):
    server.script = [Reply(429, {"error": {"message": "quota"}})] * 4
    embedder = make_embedder(server, http)

    with pytest.raises(EmbeddingRateLimitedError) as refused:
        embedder.embed_documents(["a"])

    assert len(server.requests) == 4
    assert "wait a few minutes, then retry the upload" in refused.value.summary()


def test_a_500_is_retried_with_backoff(server, http):
    sleeps: list[float] = []
    server.script = [Reply(500, {"error": "boom"}), Reply(502, "<html>bad gateway</html>")]
    embedder = make_embedder(server, http, retry=quick_retry(sleep=sleeps.append))

    assert embedder.embed_documents(["a"]) == [vector_for("a", 256)]
    assert len(server.requests) == 3
    assert len(sleeps) == 2 and all(0 <= s <= 0.05 for s in sleeps)


def test_an_outage_is_refused_as_a_provider_error_after_bounded_attempts(server, http, caplog):
    server.script = [Reply(503, {"error": "upstream at 10.0.0.7 unavailable"})] * 4
    embedder = make_embedder(server, http)

    with (
        caplog.at_level(logging.WARNING, logger="sluice.embedding"),
        pytest.raises(EmbeddingProviderError) as e,
    ):
        embedder.embed_documents(["a"])

    assert len(server.requests) == 4
    assert_tells_nothing_of_the_provider(e.value, server, "10.0.0.7", "upstream")
    assert sum("retried" in r.getMessage() for r in caplog.records) == 3


def test_a_server_slower_than_the_read_timeout_is_abandoned_within_bounds(server, http):
    # GIVEN a server that sleeps 2 s and a read timeout of 0.2 s, two attempts
    server.script = [Reply(sleep=2.0), Reply(sleep=2.0)]
    embedder = make_embedder(
        server, http, timeout=httpx.Timeout(1.0, read=0.2), retry=quick_retry(max_attempts=2)
    )

    started = time.monotonic()
    with pytest.raises(EmbeddingProviderError) as refused:
        embedder.embed_documents(["a"])
    elapsed = time.monotonic() - started

    # THEN both attempts timed out and the call ended long before the server answered once
    assert len(server.requests) == 2
    assert elapsed < 1.5
    assert isinstance(refused.value.__cause__, httpx.TimeoutException)


def test_the_total_time_bounds_the_attempts(server, http):
    server.script = [Reply(sleep=2.0)] * 10
    embedder = make_embedder(
        server,
        http,
        timeout=httpx.Timeout(1.0, read=0.3),
        retry=quick_retry(max_attempts=10, total_seconds=0.7),
    )

    started = time.monotonic()
    with pytest.raises(EmbeddingProviderError):
        embedder.embed_documents(["a"])

    assert time.monotonic() - started < 1.2
    assert len(server.requests) < 10


def test_a_closed_port_is_a_provider_error(http):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = EmbeddingSpec("openai", "nomic-embed-text", 768, base_url=f"http://127.0.0.1:{port}/v1")
    embedder = OpenAICompatibleEmbedder(
        spec, find_model("openai", "nomic-embed-text"), http_client=http, retry=quick_retry(max_attempts=2)
    )

    with pytest.raises(EmbeddingProviderError) as refused:
        embedder.embed_documents(["a"])
    for text in (str(refused.value), refused.value.summary()):
        assert str(port) not in text and "127.0.0.1" not in text


# --- refusals -----------------------------------------------------------------------------------


def test_an_endpoint_that_now_resolves_internally_is_refused_before_anything_is_sent(server):
    # Configured when its name was public; by the time the worker connects, it points inside the network.
    with guarded_http_client(EndpointPolicy(), timeout=httpx.Timeout(5.0)) as guarded:
        embedder = make_embedder(server, guarded)
        with pytest.raises(EmbeddingEndpointRefusedError) as refused:
            embedder.embed_documents(["a"])
    assert server.requests == []
    assert not refused.value.transient
    assert "EndpointRefused" in refused.value.summary()
    assert_tells_nothing_of_the_provider(refused.value, server)



def test_a_401_fails_with_a_summary_that_names_neither_endpoint_nor_key(server, http, caplog):
    # GIVEN a provider that refuses the key and echoes it with its own address
    port = server.server_address[1]
    message = f"Incorrect API key provided: {API_KEY}. See http://127.0.0.1:{port}/account/api-keys"
    server.script = [Reply(401, {"error": {"message": message, "type": "invalid_request_error"}})]
    embedder = make_embedder(server, http)

    with (
        caplog.at_level(logging.ERROR, logger="sluice.embedding"),
        pytest.raises(EmbeddingAuthenticationError) as refused,
    ):
        embedder.embed_documents(["a", "b"])

    # THEN no retry, and the row's summary is R-DOC-4's, with nothing of the provider in it
    assert len(server.requests) == 1
    error = refused.value
    assert error.summary() == (
        "The document could not be indexed (AuthenticationError) - check the collection's embedding "
        "credential, then retry the upload. The worker log has the full error."
    )
    assert not error.transient
    assert_tells_nothing_of_the_provider(error, server, "Incorrect", "api-keys")
    # AND the worker log has the detail, with the traceback
    (record,) = [r for r in caplog.records if r.name == "sluice.embedding" and r.levelno == logging.ERROR]
    assert "401" in record.getMessage() and "Incorrect API key" in record.getMessage()
    assert record.exc_info is not None


def test_a_refused_key_is_forgotten_so_a_rotated_one_is_read_next_time(server, http):
    class RotatingSecrets(DictSecrets):
        def __init__(self, values: dict[str, str]) -> None:
            super().__init__(values)
            self.forgotten: list[str] = []

        def forget(self, secret_id: str) -> None:
            self.forgotten.append(secret_id)

    secrets = RotatingSecrets({SECRET_ID: API_KEY})
    server.script = [Reply(403, {"error": "forbidden"})]

    with pytest.raises(EmbeddingAuthenticationError):
        make_embedder(server, http, secrets=secrets).embed_documents(["a"])
    assert secrets.forgotten == [SECRET_ID]


@pytest.mark.parametrize(
    ("secrets", "why"),
    [
        ({}, "the secret is gone"),
        ({SECRET_ID: json.dumps({"token": "x"})}, "the secret holds no api_key"),
        ({SECRET_ID: "   "}, "the secret is empty"),
    ],
)
def test_a_key_that_cannot_be_read_refuses_before_any_request(server, http, secrets, why):
    with pytest.raises(EmbeddingCredentialMissingError) as refused:
        make_embedder(server, http, secrets=DictSecrets(secrets)).embed_documents(["a"])

    assert server.requests == [], why
    assert "(CredentialMissingError)" in refused.value.summary()


@pytest.mark.parametrize(
    ("status", "body", "failure"),
    [
        (
            404,
            {"error": {"message": "model 'nomic-embed-text' not found, try pulling it first"}},
            EmbeddingModelNotServedError,
        ),
        (
            400,
            {"error": {"message": "The model `x` does not exist", "code": "model_not_found"}},
            EmbeddingModelNotServedError,
        ),
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens, however you "
                    "requested 9000 tokens"
                }
            },
            EmbeddingInputRejectedError,
        ),
        (413, "payload too large", EmbeddingInputRejectedError),
        (405, "method not allowed", EmbeddingModelNotServedError),
    ],
)
def test_a_refusal_is_classified_and_not_retried(server, http, status, body, failure):
    server.script = [Reply(status, body)]

    with pytest.raises(failure):
        make_embedder(server, http).embed_documents(["a"])
    assert len(server.requests) == 1


def test_vectors_of_another_width_are_refused(server, http):
    # GIVEN an endpoint that ignores the width it was asked for
    server.width = 1536
    embedder = make_embedder(server, http)

    with pytest.raises(EmbeddingResponseError) as refused:
        embedder.embed_documents(["a"])
    assert "(ResponseError)" in refused.value.summary()
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        "not json at all",
        {"object": "list"},
        {"data": [{"index": 0, "embedding": [0.1] * 256}]},  # two texts sent, one vector back
        {"data": [{"index": 0, "embedding": [0.1] * 256}, {"index": 0, "embedding": [0.2] * 256}]},
        {"data": [{"index": 0, "embedding": [0.1] * 256}, {"index": 1, "embedding": "AAAA"}]},
        {"data": [{"index": 0, "embedding": [0.1] * 256}, {"index": 1, "embedding": ["a"] * 256}]},
    ],
)
def test_a_malformed_answer_is_a_response_error(server, http, body):
    server.script = [Reply(200, body)]
    with pytest.raises(EmbeddingResponseError):
        make_embedder(server, http).embed_documents(["a", "b"])
