"""sluice-client against the local stack (`sluice local up` in this session): uploads direct and presigned,
waits, search, the service's refusals as exception classes, and a 429 waited out for its Retry-After."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from sluice.config import reset_settings
from tests.e2e.client_support import PLANTED, QUESTION, planted_base, sluice_client, user
from tests.unit.parsing.parsing_samples import pdf_bytes

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
Sluice, AsyncSluice, errors = sluice_client.Sluice, sluice_client.AsyncSluice, sluice_client.errors


@pytest.fixture
def connect(runtime, make_token):
    made: list = []

    def make(name: str, **kwargs):
        client = Sluice(runtime.api_url, token=make_token(name), **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def limits(monkeypatch):
    def apply(**values: str) -> None:
        for k, v in values.items():
            monkeypatch.setenv(k, v)
        reset_settings()

    yield apply
    monkeypatch.undo()
    reset_settings()


def test_direct_and_presigned_uploads_are_waited_to_done_and_found(connect, tmp_path):
    sluice = connect(user("ada"), direct_limit=4096)
    kb = sluice.create_knowledge_base("Client uploads")
    small = sluice.upload(kb.id, PLANTED.encode(), filename="contract.txt")
    pdf = tmp_path / "manual.pdf"
    # Over the client's direct limit: presigned, straight to storage (a PDF past the 4 KB set here).
    pdf.write_bytes(pdf_bytes(["The forklift charger manual: plug the charger into a 400 V socket."] +
                              [f"Appendix page {i}. " + "Torque table values. " * 400 for i in range(8)]))
    assert pdf.stat().st_size > 4096
    large = sluice.upload(kb.id, pdf, document_type="manual")

    done = [sluice.wait(small, timeout=180, poll=0.2), sluice.wait(large.id, timeout=180, poll=0.2)]
    assert [d.status for d in done] == ["done", "done"]
    assert done[1].filename == "manual.pdf" and done[1].document_type == "manual"
    assert done[1].storage_path.endswith("_manual.pdf") and done[1].chunk_count > 0
    listed = {d.id for d in sluice.iter_documents(kb.id)}
    assert listed == {small.id, large.id}

    found = sluice.search(QUESTION, [kb.collection_name], top_k=2)
    assert found.results[0].document_id == small.id
    assert "two percent of the Contract Price" in found.results[0].content
    socket = sluice.search("which socket does the charger plug into", [kb.collection_name], top_k=1)
    assert socket.results[0].filename == "manual.pdf" and socket.results[0].page_start == 1
    diagnostic = sluice.diagnostic_search(QUESTION, [kb.collection_name])
    assert diagnostic.candidates[0].document_id == small.id


def test_another_users_base_is_not_found_with_the_services_sentence(connect):
    owner, stranger = connect(user("olga")), connect(user("mallory"))
    kb = owner.create_knowledge_base("Private")
    with pytest.raises(errors.NotFound) as refused:
        stranger.get_knowledge_base(kb.id)
    assert refused.value.status == 404 and refused.value.code == "NOT_FOUND"
    assert str(refused.value) == "Collection not found"
    with pytest.raises(errors.NotFound, match="^Collection not found$"):
        stranger.search("anything", [kb.collection_name])
    with pytest.raises(errors.NotFound):
        stranger.upload(kb.id, b"some words here", filename="a.txt")


def test_a_429_is_waited_out_for_its_retry_after_and_sent_again(connect, limits):
    limits(UPLOAD_RATE_PER_MINUTE="2")
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        # Instead of a minute's sleep: lift the limit, so the request sent again is taken.
        waits.append(seconds)
        limits(UPLOAD_RATE_PER_MINUTE="100")

    sluice = connect(user("rita"), sleep=sleep)
    kb = sluice.create_knowledge_base("Rate limited")
    first = [sluice.upload(kb.id, f"note {i} about tides".encode(), filename=f"n{i}.txt") for i in range(2)]
    assert waits == []
    third = sluice.upload(kb.id, b"note 2 about tides", filename="n2.txt")
    assert len(waits) == 1 and 1 <= waits[0] <= 60  # the service's Retry-After, in seconds
    assert third.status == "processing"
    assert {d.id for d in sluice.iter_documents(kb.id)} == {first[0].id, first[1].id, third.id}


def test_a_429_longer_than_the_clients_max_wait_raises_with_retry_after(connect, limits):
    limits(UPLOAD_RATE_PER_MINUTE="1")
    sluice = connect(user("sam"), retry=sluice_client.RetryPolicy(max_wait=0.5),
                     sleep=lambda s: pytest.fail("waited"))
    kb = sluice.create_knowledge_base("Max wait")
    sluice.upload(kb.id, b"first note", filename="a.txt")
    with pytest.raises(errors.RateLimitExceeded) as refused:
        sluice.upload(kb.id, b"second note", filename="b.txt")
    assert refused.value.status == 429 and 1 <= refused.value.retry_after <= 60
    assert refused.value.message.startswith("Too many uploads")


def test_a_failed_document_raises_with_the_services_sentence(connect):
    sluice = connect(user("fay"))
    kb = sluice.create_knowledge_base("Failing")
    accepted = sluice.upload(kb.id, b"%PDF-1.7 this is not really a pdf", filename="broken.pdf")
    with pytest.raises(errors.Failed) as failed:
        sluice.wait(accepted, timeout=120, poll=0.2)
    assert failed.value.result.status == "error"
    assert str(failed.value) == failed.value.result.error_message and str(failed.value)


def test_a_wait_that_runs_out_of_time_says_where_the_document_was(connect):
    sluice = connect(user("tim"))
    kb = sluice.create_knowledge_base("Timeout")
    # A presigned upload whose file never reaches storage stays processing: nothing can finish it early.
    accepted = sluice.presign_upload(kb.id, "later.txt", 20)
    late_sentence = r"^Document \S+ was not finished after 0.3 s \(still queued\)$"
    with pytest.raises(errors.WaitTimeout, match=late_sentence) as late:
        sluice.wait(accepted, timeout=0.3, poll=0.1)
    assert late.value.last.id == accepted.id and late.value.last.status == "processing"
    sluice.delete_document(accepted.id)


def test_a_teardown_is_followed_to_done(connect):
    sluice = connect(user("tess"))
    kb = sluice.create_knowledge_base("To tear down")
    sluice.wait(sluice.upload(kb.id, b"words to tear down", filename="t.txt"), timeout=120, poll=0.2)
    teardown = sluice.delete_knowledge_base(kb.id)
    final = sluice.wait_teardown(teardown, timeout=120, poll=0.2)
    assert final.state == "done" and final.removed.documents == 1
    with pytest.raises(errors.NotFound):
        sluice.get_knowledge_base(kb.id)


def test_the_async_client_uploads_waits_and_searches(runtime, make_token):
    name = user("asa")

    async def refreshing_token() -> str:
        return make_token(name)

    async def scenario():
        async with AsyncSluice(runtime.api_url, token=refreshing_token) as sluice:
            kb, docs = await asyncio.to_thread(planted_base, Sluice(runtime.api_url, token=make_token(name)))
            found = await sluice.search(QUESTION, [kb.collection_name], top_k=1,
                                        filters={"organizational_unit": ["legal"]})
            listed = [d.id async for d in sluice.iter_documents(kb.id)]
            with pytest.raises(errors.NotFound):
                await sluice.get_document(str(uuid.uuid4()))
            return docs, found, listed

    docs, found, listed = asyncio.run(scenario())
    assert found.results[0].document_id == docs[0].id
    assert sorted(listed) == sorted(d.id for d in docs)


def test_the_cli_search_through_the_api_prints_the_services_refusal(connect, runtime, make_token, capsys):
    import json

    from sluice import cli

    owner = connect(user("cleo"))
    kb = owner.create_knowledge_base("CLI refusal")
    stranger = make_token(user("mallory"))
    assert cli.main(["search", "anything", "-c", kb.collection_name, "--api", runtime.api_url,
                     "--token", stranger]) == 1
    assert json.loads(capsys.readouterr().err) == {
        "error": {"code": "NOT_FOUND", "message": "Collection not found", "details": {}}}
