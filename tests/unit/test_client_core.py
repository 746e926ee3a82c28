"""sluice-client's sending rules, against a transport that answers as the service does: which refusals are
retried and after how long, which are raised as which class, and the token provider."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

sluice_client = pytest.importorskip("sluice_client", reason="sluice-client is not installed (make install)")
errors = sluice_client.errors


def refusal(status: int, code: str, message: str, details: dict | None = None,
            headers: dict | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers or {},
                          json={"error": {"code": code, "message": message, "details": details or {}}})


SEARCH_OK = {"query": "q", "results": [], "count": 0}
ACCEPTED = {"id": "d1", "status": "processing", "filename": "a.txt", "collection_name": "c", "document_id": None}


def client(answers: list[httpx.Response], seen: list[httpx.Request], **kwargs):
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    sleeps: list[float] = []
    c = sluice_client.Sluice("http://sluice.test", token=kwargs.pop("token", "t0"),
                             transport=httpx.MockTransport(handle), sleep=sleeps.append, **kwargs)
    return c, sleeps


def test_a_safe_call_waits_out_a_429_for_its_retry_after_then_succeeds():
    seen: list = []
    c, sleeps = client([refusal(429, "RATE_LIMIT_EXCEEDED", "Slow down.", {"retry_after": 7}, {"Retry-After": "7"}),
                        httpx.Response(200, json=SEARCH_OK)], seen)
    assert c.search("q", ["c"]).count == 0
    assert sleeps == [7.0] and len(seen) == 2
    assert json.loads(seen[1].content) == {"query": "q", "collections": ["c"]}


def test_an_unsafe_call_raises_the_429_at_once_with_its_retry_after():
    seen: list = []
    c, sleeps = client([refusal(429, "RATE_LIMIT_EXCEEDED", "Slow down.", {"retry_after": 7}, {"Retry-After": "7"})],
                       seen)
    with pytest.raises(errors.RateLimitExceeded) as refused:
        c.start_sync_run("kb", "src")
    assert refused.value.retry_after == 7.0 and str(refused.value) == "Slow down."
    assert sleeps == [] and len(seen) == 1


def test_retries_stop_after_the_policys_attempts_and_past_its_max_wait():
    seen: list = []
    limited = [refusal(429, "RATE_LIMIT_EXCEEDED", "Slow down.", headers={"Retry-After": "2"}) for _ in range(3)]
    c, sleeps = client(limited, seen, retry=sluice_client.RetryPolicy(attempts=3))
    with pytest.raises(errors.RateLimitExceeded):
        c.list_knowledge_bases()
    assert sleeps == [2.0, 2.0] and len(seen) == 3
    c, sleeps = client([refusal(429, "RATE_LIMIT_EXCEEDED", "Slow down.", headers={"Retry-After": "120"})], seen,
                       retry=sluice_client.RetryPolicy(max_wait=60))
    with pytest.raises(errors.RateLimitExceeded) as refused:
        c.list_knowledge_bases()
    assert sleeps == [] and refused.value.retry_after == 120.0


def test_a_paused_indexing_without_retry_after_is_raised_not_retried():
    seen: list = []
    c, sleeps = client([refusal(503, "INDEXING_PAUSED", "Indexing is paused by the operator.")], seen)
    with pytest.raises(errors.IndexingPaused, match="^Indexing is paused by the operator.$"):
        c.upload("kb", b"words", filename="a.txt")
    assert sleeps == [] and len(seen) == 1


@pytest.mark.parametrize(("status", "code", "cls"), [
    (409, "DOC_CAP_REACHED", errors.DocCapReached), (404, "NOT_FOUND", errors.NotFound),
    (422, "VALIDATION_ERROR", errors.ValidationError), (400, "UNSUPPORTED_TYPE", errors.UnsupportedType),
    (413, "FILE_TOO_LARGE", errors.FileTooLarge), (502, "RERANKER_FAILED", errors.RerankerFailed),
    (409, "A_CODE_FROM_A_NEWER_SERVICE", errors.Conflict), (401, "UNAUTHORIZED", errors.Unauthorized),
])
def test_each_code_raises_its_class_with_the_services_sentence_and_details(status, code, cls):
    seen: list = []
    c, _ = client([refusal(status, code, "The sentence.", {"fields": {"name": "Taken."}})], seen)
    with pytest.raises(cls) as refused:
        c.create_knowledge_base("x")
    assert type(refused.value) is cls
    assert (refused.value.status, refused.value.code, str(refused.value)) == (status, code, "The sentence.")
    assert refused.value.fields == {"name": "Taken."}


def test_a_body_that_is_not_the_error_shape_still_raises_by_status():
    seen: list = []
    c, _ = client([httpx.Response(502, text="Bad Gateway")], seen)
    with pytest.raises(errors.ServerError, match="^HTTP 502: Bad Gateway$"):
        c.health()


def test_a_refreshing_token_provider_is_asked_for_every_request_and_again_after_a_401():
    seen: list = []
    tokens = iter(["old", "new", "newer"])
    c, _ = client([refusal(401, "UNAUTHORIZED", "Expired."), httpx.Response(200, json=SEARCH_OK),
                   httpx.Response(200, json=SEARCH_OK)], seen, token=lambda: next(tokens))
    c.search("q", ["c"])
    c.search("q", ["c"])
    assert [r.headers["Authorization"] for r in seen] == ["Bearer old", "Bearer new", "Bearer newer"]


def test_a_static_token_is_not_retried_after_a_401():
    seen: list = []
    c, _ = client([refusal(401, "UNAUTHORIZED", "No valid bearer token.")], seen, token="static")
    with pytest.raises(errors.Unauthorized):
        c.search("q", ["c"])
    assert len(seen) == 1


def test_upload_goes_direct_up_to_the_limit_and_presigned_above_it_without_the_bearer_to_storage():
    seen: list = []
    presigned = {**ACCEPTED, "upload": {"url": "http://storage.test/bucket", "fields": {"key": "k"}, "expires_in": 60}}
    c, _ = client([httpx.Response(202, json=ACCEPTED), httpx.Response(202, json=presigned)], seen, direct_limit=10)
    storage: list[httpx.Request] = []
    c._storage = httpx.Client(transport=httpx.MockTransport(lambda r: storage.append(r) or httpx.Response(204)))
    c.upload("kb", b"0123456789", filename="a.txt")
    c.upload("kb", b"0123456789A", filename="b.txt", document_type="note")
    assert [r.url.path for r in seen] == ["/kb/kb/documents", "/kb/kb/uploads"]
    assert json.loads(seen[1].content) == {"filename": "b.txt", "size": 11, "document_type": "note"}
    assert len(storage) == 1 and "Authorization" not in storage[0].headers
    assert b'name="key"' in storage[0].content and b"0123456789A" in storage[0].content


def test_a_presigned_upload_storage_refused_removes_its_document_and_says_why():
    seen: list = []
    presigned = {**ACCEPTED, "upload": {"url": "http://storage.test/bucket", "fields": {}, "expires_in": 60}}
    c, _ = client([httpx.Response(202, json=presigned),
                   httpx.Response(200, json={"id": "d1", "deleted": True})], seen, direct_limit=1)
    c._storage = httpx.Client(transport=httpx.MockTransport(
        lambda r: httpx.Response(403, text="<Error><Message>Policy expired</Message></Error>")))
    with pytest.raises(errors.StorageRefused, match=r"^Storage refused the file \(HTTP 403\): Policy expired$"):
        c.upload("kb", b"words", filename="a.txt")
    assert [(r.method, r.url.path) for r in seen] == [("POST", "/kb/kb/uploads"), ("DELETE", "/rag/documents/d1")]


def test_the_async_client_awaits_an_async_token_and_retries_the_same_way():
    seen: list = []
    answers = [refusal(429, "RATE_LIMIT_EXCEEDED", "Slow down.", headers={"Retry-After": "3"}),
               httpx.Response(200, json=SEARCH_OK)]

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    sleeps: list[float] = []

    async def token() -> str:
        return "async-token"

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async def run():
        async with sluice_client.AsyncSluice("http://sluice.test", token=token, sleep=sleep,
                                             transport=httpx.MockTransport(handle)) as c:
            return await c.search("q", ["c"], alpha=0.5)

    assert asyncio.run(run()).count == 0
    assert sleeps == [3.0] and seen[1].headers["Authorization"] == "Bearer async-token"
    assert json.loads(seen[1].content)["alpha"] == 0.5


def test_both_clients_bind_every_operation():
    from sluice_client import _ops

    assert len(_ops.ALL) >= 60
    for name in _ops.ALL:
        assert callable(getattr(sluice_client.Sluice, name)), name
        assert asyncio.iscoroutinefunction(getattr(sluice_client.AsyncSluice, name)), name


def test_an_api_that_does_not_answer_raises_unreachable_with_its_address():
    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("All connection attempts failed")

    c = sluice_client.Sluice("http://sluice.test", token="t", transport=httpx.MockTransport(handle))
    with pytest.raises(sluice_client.Unreachable,
                       match="^The Sluice API at http://sluice.test did not answer: All connection attempts failed$"):
        c.health()
