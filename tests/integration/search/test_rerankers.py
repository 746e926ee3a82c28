"""Rerankers behind one protocol: HTTP (Cohere and TEI dialects), Bedrock, and their place in the ranking."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from botocore.exceptions import ClientError

from sluice.embedding.rerank import (
    BedrockReranker,
    HttpReranker,
    RerankerSettings,
    build_reranker,
    sigmoid,
)
from sluice.errors import RerankerError
from sluice.retry import RetryPolicy
from sluice.search.service import SearchRequest, search
from sluice.vectors import store
from tests.fakes import embedder_returning
from tests.integration.search.conftest import make_base, unit, viewer

NO_WAIT = RetryPolicy(max_attempts=3, base_delay=0.0, max_delay=0.0, total_seconds=5.0, sleep=lambda s: None)


def http_reranker(handler, **kw) -> tuple[HttpReranker, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    client = httpx.Client(transport=httpx.MockTransport(record))
    return HttpReranker("http://rerank.internal/v1", http_client=client, retry=NO_WAIT, **kw), seen


def test_cohere_dialect_keeps_probabilities_in_input_order():
    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert body["documents"] == ["a", "b", "c"] and body["query"] == "q" and body["model"] == "rerank-v3.5"
        return httpx.Response(200, json={"results": [{"index": 2, "relevance_score": 0.9},
                                                     {"index": 0, "relevance_score": 0.5},
                                                     {"index": 1, "relevance_score": 0.1}]})

    reranker, seen = http_reranker(answer, model="rerank-v3.5")
    assert reranker.score("q", ["a", "b", "c"]) == [0.5, 0.1, 0.9]
    assert str(seen[0].url) == "http://rerank.internal/v1/rerank"


def test_tei_dialect_asks_for_raw_logits_and_applies_the_sigmoid():
    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert body["texts"] == ["a", "b"] and body["raw_scores"] is True
        return httpx.Response(200, json=[{"index": 1, "score": -3.0}, {"index": 0, "score": 2.0}])

    reranker, _ = http_reranker(answer, api="tei")
    assert reranker.score("q", ["a", "b"]) == pytest.approx([sigmoid(2.0), sigmoid(-3.0)])


def test_a_cohere_dialect_server_answering_logits_is_declared_and_squashed():
    reranker, _ = http_reranker(
        lambda r: httpx.Response(200, json={"results": [{"index": 0, "relevance_score": 0.0}]}), logits=True)
    assert reranker.score("q", ["a"]) == [0.5]


def test_sigmoid_is_stable_at_the_extremes():
    assert sigmoid(1000) == 1.0 and sigmoid(-1000) == 0.0 and sigmoid(0) == 0.5


def test_the_key_is_read_from_the_secret_and_sent_as_bearer():
    class Secrets:
        def get_secret(self, secret_id: str) -> str:
            assert secret_id == "rerank-key"
            return json.dumps({"api_key": "sk-123"})

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Bearer sk-123"
        return httpx.Response(200, json={"results": [{"index": 0, "relevance_score": 0.7}]})

    reranker, _ = http_reranker(answer, secrets=Secrets(), secret_id="rerank-key")
    assert reranker.score("q", ["a"]) == [0.7]


def test_transient_failures_are_retried_then_refused_without_leaking_the_endpoint():
    calls = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(503, text="upstream http://10.0.0.7:8080 overloaded")

    reranker, _ = http_reranker(answer)
    with pytest.raises(RerankerError) as err:
        reranker.score("q", ["a"])
    assert len(calls) == 3
    assert err.value.status == 502
    assert "10.0.0.7" not in err.value.message and "rerank.internal" not in err.value.message


def test_a_refusal_is_not_retried_and_a_short_answer_is_refused():
    reranker, seen = http_reranker(lambda r: httpx.Response(401, json={"message": "bad key"}))
    with pytest.raises(RerankerError):
        reranker.score("q", ["a"])
    assert len(seen) == 1
    reranker, _ = http_reranker(lambda r: httpx.Response(200, json={"results": [{"index": 0, "relevance_score": 1}]}))
    with pytest.raises(RerankerError):
        reranker.score("q", ["a", "b"])


class FakeBedrockAgentRuntime:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[dict] = []
        self.fail = fail

    def rerank(self, **kwargs):
        self.calls.append(kwargs)
        if self.fail:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "Rerank")
        n = len(kwargs["sources"])
        return {"results": [{"index": i, "relevanceScore": (i + 1) / (n + 1)} for i in reversed(range(n))]}


def test_bedrock_rerank_request_and_answer():
    client = FakeBedrockAgentRuntime()
    arn = "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"
    reranker = BedrockReranker(arn, client=client)
    assert reranker.score("what is the penalty", ["x", "y", "z"]) == pytest.approx([0.25, 0.5, 0.75])
    call = client.calls[0]
    assert call["queries"] == [{"type": "TEXT", "textQuery": {"text": "what is the penalty"}}]
    assert call["sources"][1]["inlineDocumentSource"]["textDocument"]["text"] == "y"
    config = call["rerankingConfiguration"]["bedrockRerankingConfiguration"]
    assert config["modelConfiguration"]["modelArn"] == arn and config["numberOfResults"] == 3
    with pytest.raises(RerankerError):
        BedrockReranker(arn, client=FakeBedrockAgentRuntime(fail=True)).score("q", ["a"])


def test_settings_choose_the_reranker(monkeypatch):
    assert build_reranker(RerankerSettings()) is None
    monkeypatch.setenv("RERANKER_PROVIDER", "http")
    monkeypatch.setenv("RERANKER_URL", "http://tei:8080")
    monkeypatch.setenv("RERANKER_API", "tei")
    reranker = build_reranker(RerankerSettings(), http_client=httpx.Client())
    assert isinstance(reranker, HttpReranker) and reranker.name == "http:tei"
    monkeypatch.setenv("RERANKER_PROVIDER", "bedrock")
    monkeypatch.setenv("RERANKER_MODEL", "arn:aws:bedrock:us-east-1::foundation-model/cohere.rerank-v3-5:0")
    assert isinstance(build_reranker(RerankerSettings(), bedrock_agent_client=FakeBedrockAgentRuntime()),
                      BedrockReranker)


class ScoreByLength:
    name = "fake"

    def score(self, query: str, texts):
        return [min(1.0, len(t) / 40) for t in texts]


def test_the_service_reranks_across_collections(conn):
    q = unit([1, 0, 0, 0, 0, 0, 0, 0])
    for name in ("one", "two"):
        store.ensure_table(conn, name, 8)
        base = make_base(conn, name)
        store.insert_chunks(conn, name, [
            store.ChunkRow(document_id=uuid.uuid4(), kb_id=base.id, org_id="acme", chunk_index=i, content=t,
                           embedding=q) for i, t in enumerate([f"{name} short", f"{name} a rather longer chunk text"])])
    req = SearchRequest(query="q", collections=["one", "two"], top_k=4)
    outcome = search(conn, viewer(), req, embedder_returning(q), ScoreByLength())
    # "x short" scores 0.225 with the fake reranker: under the 0.30 gate
    assert [c.content for c in outcome.results] == ["one a rather longer chunk text", "two a rather longer chunk text"]
    assert all(c.reranker_score is not None for c in outcome.candidates)
