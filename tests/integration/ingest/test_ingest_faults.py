"""Fault injection (issue 17): the real stages, the real PostgreSQL and moto's S3, with faults where
production meets them. After every fault the same account is taken: each document is ``done`` or
``error`` with a summary, none is left ``processing``, no chunk belongs to a document that is not
done, no stored object belongs to no document, and each done document has exactly its chunks, indexed
0..n-1 once.

The outside provider is the only fake: an OpenAI-compatible server on loopback (tests/fakes.py)
that answers 429, 500, slowly, or garbage when told to.
"""

from __future__ import annotations

import random
import uuid

import botocore.exceptions
import httpx
import pytest

from sluice.db.connection import transaction
from sluice.db.knowledge_bases import KnowledgeBase
from sluice.embedding import EmbeddingSpec, find_model
from sluice.embedding.openai_compatible import OpenAICompatibleEmbedder
from sluice.ingest import documents
from sluice.ingest.dead_letters import on_dead_letter
from sluice.retry import RetryPolicy
from tests.fakes import FakeOpenAI, Reply, serving
from tests.integration.ingest.conftest import ALICE, paragraphs
from tests.session_servers import restart_postgres

DELIVERIES = 3  # the stage queues' maxReceiveCount in template.yaml


def settled(h) -> dict[str, int]:
    """The account every fault test closes with; answers the documents per status."""
    with transaction() as conn:
        rows = conn.execute("SELECT id, status, error_message, chunk_count, storage_path FROM documents").fetchall()
        table = f"rag_{h.kb.collection_name}"
        exists = conn.execute("SELECT to_regclass(%s) AS t", (table,)).fetchone()["t"] is not None
        chunks = conn.execute(f"SELECT document_id, chunk_index FROM {table}").fetchall() if exists else []
    by_id = {r["id"]: r for r in rows}
    stuck = [r["id"] for r in rows if r["status"] not in ("done", "error")]
    assert stuck == [], f"documents left {[(by_id[i]['status']) for i in stuck]}"
    assert [r["id"] for r in rows if r["status"] == "error" and not (r["error_message"] or "").strip()] == []
    orphan_chunks = {c["document_id"] for c in chunks if c["document_id"] not in by_id
                     or by_id[c["document_id"]]["status"] != "done"}
    assert orphan_chunks == set(), "chunks of documents that are gone or not done"
    for r in rows:
        if r["status"] == "done":
            indexes = sorted(c["chunk_index"] for c in chunks if c["document_id"] == r["id"])
            assert indexes == list(range(r["chunk_count"])) and r["chunk_count"] > 0, r["id"]
    stored = {r["storage_path"] for r in rows if r["storage_path"]}
    assert [k for k in h.keys("rag/") if k not in stored] == [], "files no document holds"
    texts = {f"text/{r['id']}.txt" for r in rows}
    assert [k for k in h.keys("text/") if k not in texts] == [], "texts of no document"
    return {status: sum(r["status"] == status for r in rows) for status in ("done", "error")}


def deliver_until_settled(h, message, deliveries: int = DELIVERIES) -> int:
    """The queue's view: deliver again while the handler raises, up to maxReceiveCount; answers the
    deliveries it took. A message that failed every delivery goes to the dead-letter handler."""
    for n in range(1, deliveries + 1):
        try:
            h.deliver(message)
            return n
        except Exception:
            continue
    kind, body = message
    key = body if kind == "stage" else body.key
    stage = "embedding" if key.startswith("stage/chunks/") else "chunking" if key.startswith("stage/") else "parsing"
    on_dead_letter(h.ctx, stage, h.object_event(key))
    return deliveries + 1


# --- PostgreSQL restarted in the middle of an embed batch ---------------------------------------


def test_postgresql_restarted_in_the_middle_of_an_embed_batch(harness, pg_server):
    h = harness
    doc_id = h.upload("ledger.txt", paragraphs(16))
    h.deliver(h.parse_message(doc_id))
    h.deliver(h.chunk_message(doc_id))
    with transaction() as conn:
        before = conn.execute("SELECT pg_postmaster_start_time() AS t").fetchone()["t"]

    def restart_on_third_batch(call: int) -> None:
        if call == 3:
            restart_postgres(pg_server)

    h.embedder.before_batch = restart_on_third_batch
    deliveries = deliver_until_settled(h, h.embed_message(doc_id))

    with transaction() as conn:  # the server did restart under the stage
        assert conn.execute("SELECT pg_postmaster_start_time() AS t").fetchone()["t"] > before
    assert deliveries <= DELIVERIES
    assert settled(h) == {"done": 1, "error": 0}
    assert h.document(doc_id).chunk_count > 8  # 16 paragraphs at chunk_size 300: more than the restart's 3 batches


# --- the embedding provider answering 429, 500, slowly and garbage ------------------------------


@pytest.fixture
def provider(harness):
    """The harness's base, embedding through a real OpenAI-compatible client to a fake server."""
    h = harness
    with serving(FakeOpenAI()) as server, httpx.Client() as http:
        spec = EmbeddingSpec("openai", "text-embedding-3-small", 256, base_url=server.base_url, secret_id=None)
        embedder = OpenAICompatibleEmbedder(
            spec, find_model("openai", "text-embedding-3-small", 256), http_client=http, batch_size=4,
            timeout=httpx.Timeout(2.0, read=0.3),
            retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, total_seconds=3.0))
        kb = KnowledgeBase(
            id=uuid.uuid4(), name="Provider", collection_name=f"provider_{uuid.uuid4().hex[:6]}",
            scope="personal", owner_id="alice", org_id=None, is_default=False, description="",
            embedding_provider="openai", embedding_model="text-embedding-3-small", embedding_dim=256,
            embedding_base_url=server.base_url, embedding_secret_id=None, ingestion_config={"chunk_size": 300},
            created_by="alice")
        from sluice.db import knowledge_bases as kb_repo

        with transaction() as conn:
            h.kb = kb_repo.insert(conn, kb)
        h.ctx.embedder_for = lambda _spec: embedder
        yield server


GARBAGE = [  # tests/unit/embedding/test_embedding_openai.py refuses more shapes of it, one call each
    "<html>502 Bad Gateway</html>",
    {"data": [{"index": 0, "embedding": "not a vector"}]},
    {"data": [{"index": 0, "embedding": [0.1, 0.2]}]},  # the wrong width
    {"object": "list"},
]


def test_transient_provider_faults_are_ridden_out(harness, provider):
    # GIVEN a provider that rate-limits, fails and stalls past the read timeout, once each
    h = harness
    provider.script = [Reply(429, {"error": "slow down"}, headers={"Retry-After": "0"}), Reply(500, {"error": "x"}),
                       Reply(sleep=1.0), Reply(503, {"error": "y"})]
    ids = [h.upload(f"doc{i}.txt", paragraphs(6, topic=f"topic {i}")) for i in range(3)]
    for doc_id in ids:
        for message in (h.parse_message(doc_id), h.chunk_message(doc_id), h.embed_message(doc_id)):
            deliver_until_settled(h, message)
    # THEN every document is indexed, each chunk once
    assert provider.script == [] and len(provider.requests) > 4
    assert settled(h) == {"done": 3, "error": 0}


@pytest.mark.parametrize("garbage", [GARBAGE[0], GARBAGE[2]], ids=["html", "wrong-width"])
def test_one_garbage_answer_fails_only_its_document_which_a_retry_completes(harness, provider, garbage):
    # A 200 that is not an embeddings list of the collection's width is not retried: the summary
    # tells the owner to check the endpoint (R-DOC-4); the other documents are not touched.
    h = harness
    first, second = h.upload("first.txt", paragraphs(5)), h.upload("second.txt", paragraphs(5, topic="audit"))
    provider.script = [Reply(200, garbage)]
    for doc_id in (first, second):
        for message in (h.parse_message(doc_id), h.chunk_message(doc_id), h.embed_message(doc_id)):
            deliver_until_settled(h, message)
    assert settled(h) == {"done": 1, "error": 1}
    assert h.document(first).error_message.startswith("The document could not be indexed (ResponseError)")
    with transaction() as conn:
        documents.retry_document(conn, ALICE, h.ctx.store, str(first), h.ctx.settings)
    h.run_pipeline(first, attempt=2)
    assert settled(h) == {"done": 2, "error": 0}


@pytest.mark.parametrize("reply", [Reply(429, {"error": "quota"}, headers={"Retry-After": "0"}),
                                   Reply(500, {"error": "upstream at 10.1.2.3 down"}),
                                   Reply(sleep=1.0)],
                         ids=["429", "500", "timeout"])
def test_a_provider_that_keeps_failing_ends_the_document_in_error_with_a_summary(harness, provider, reply):
    h = harness
    provider.script = [reply] * 200
    doc_id = h.upload("policy.txt", paragraphs(6))
    for message in (h.parse_message(doc_id), h.chunk_message(doc_id), h.embed_message(doc_id)):
        deliver_until_settled(h, message)
    assert settled(h) == {"done": 0, "error": 1}
    doc = h.document(doc_id)
    assert doc.status == "error" and doc.stage == "embedding"
    assert doc.error_message.startswith("The document could not be indexed ("), doc.error_message
    for leak in ("127.0.0.1", "10.1.2.3", "upstream", "http", "Traceback"):
        assert leak not in doc.error_message
    assert h.chunk_count() == 0


# --- S3 PutObject failing after the row was written ---------------------------------------------


def test_a_put_that_fails_after_the_row_was_written_leaves_an_error_and_no_object(harness, monkeypatch):
    h = harness
    real_put = h.ctx.store.put

    def refused(*args, **kwargs):
        raise botocore.exceptions.ClientError({"Error": {"Code": "InternalError", "Message": "We encountered an "
                                                         "internal error at bucket sluice-test"}}, "PutObject")

    monkeypatch.setattr(h.ctx.store, "put", refused)
    with pytest.raises(botocore.exceptions.ClientError):
        h.upload("lost.txt", paragraphs(3))
    monkeypatch.setattr(h.ctx.store, "put", real_put)
    kept = h.upload("kept.txt", paragraphs(3))
    h.run_pipeline(kept)

    assert settled(h) == {"done": 1, "error": 1}
    with transaction() as conn:
        lost = conn.execute("SELECT * FROM documents WHERE filename = 'lost.txt'").fetchone()
    assert lost["error_message"] == "The file could not be stored; upload it again."
    assert h.keys(lost["storage_path"]) == []


def test_a_put_that_stored_the_object_and_then_failed_can_be_retried(harness, monkeypatch):
    # The ambiguous failure: S3 kept the object, the answer was lost (a timeout on the response).
    h = harness
    real_put = h.ctx.store.put

    def stored_then_lost(key, data, **kwargs):
        real_put(key, data, **kwargs)
        raise botocore.exceptions.ReadTimeoutError(endpoint_url="https://s3.amazonaws.com")

    monkeypatch.setattr(h.ctx.store, "put", stored_then_lost)
    with pytest.raises(botocore.exceptions.ReadTimeoutError):
        h.upload("ambiguous.txt", paragraphs(4))
    monkeypatch.setattr(h.ctx.store, "put", real_put)
    with transaction() as conn:
        doc_id = conn.execute("SELECT id FROM documents WHERE filename = 'ambiguous.txt'").fetchone()["id"]

    # the object's own S3 event still arrives: it indexes nothing for a row that failed
    h.deliver(h.parse_message(doc_id))
    assert settled(h) == {"done": 0, "error": 1} and h.chunk_count() == 0
    # and the stored file is the document's, so a retry completes it
    with transaction() as conn:
        documents.retry_document(conn, ALICE, h.ctx.store, str(doc_id), h.ctx.settings)
    h.run_pipeline(doc_id, attempt=2)
    assert settled(h) == {"done": 1, "error": 0}


# --- a stage handler killed mid-message ---------------------------------------------------------


class Killed(BaseException):
    """The function's process ending mid-message (a timeout or an out-of-memory kill): no except
    clause of the handler runs, the message becomes visible again and is delivered anew."""


@pytest.mark.parametrize("where", ["parse-after-text", "chunk-after-artifact", "embed-mid-batches"])
def test_a_stage_killed_mid_message_completes_on_redelivery(harness, monkeypatch, where):
    h = harness
    doc_id = h.upload("killed.txt", paragraphs(12))
    store = h.ctx.store
    real_put = store.put
    state = {"armed": True}

    def put_then_die(key, data, **kwargs):
        real_put(key, data, **kwargs)
        watched = "text/" if where == "parse-after-text" else "stage/chunks/"
        if state["armed"] and key.startswith(watched):
            state["armed"] = False
            raise Killed(key)

    if where == "embed-mid-batches":
        def die(call: int) -> None:
            if call == 3 and state["armed"]:
                state["armed"] = False
                raise Killed("batch 3")

        h.embedder.before_batch = die
    else:
        monkeypatch.setattr(store, "put", put_then_die)

    for message in (h.parse_message(doc_id), h.chunk_message(doc_id), h.embed_message(doc_id)):
        try:
            h.deliver(message)
        except Killed:
            assert h.document(doc_id).status == "processing"
            h.deliver(message)  # the same message, delivered again
    assert not state["armed"], "the kill never happened"
    assert settled(h) == {"done": 1, "error": 0}


# --- the pump delivering every message twice and out of order ----------------------------------


@pytest.mark.parametrize("seed", [7])
def test_every_message_twice_and_out_of_order_across_documents(harness, seed):
    # GIVEN five documents in flight, and a queue that hands out every message it holds twice, in
    # any order; a stage's message exists once the stage before it has written its artifact
    h = harness
    rng = random.Random(seed)
    ids = [h.upload(f"doc{i}.md", paragraphs(4 + i, topic=f"subject {i}")) for i in range(5)]
    pending = [h.parse_message(doc_id) for doc_id in ids] * 2
    announced: set[str] = set()
    deliveries = 0
    while pending:
        message = pending.pop(rng.randrange(len(pending)))
        h.deliver(message)
        deliveries += 1
        for key in h.keys("stage/"):
            if key not in announced:
                announced.add(key)
                pending += [("stage", key)] * 2
    # THEN every document is indexed once, as if each message had come once and in order
    assert deliveries == 5 * 3 * 2
    assert settled(h) == {"done": 5, "error": 0}
    for doc_id in ids:
        assert h.document(doc_id).chunk_count >= 1
    with transaction() as conn:
        total = conn.execute(f"SELECT count(*) AS n FROM rag_{h.kb.collection_name}").fetchone()["n"]
        counted = conn.execute("SELECT sum(chunk_count) AS n FROM documents").fetchone()["n"]
    assert total == counted


def test_the_settled_account_catches_what_it_claims_to(harness):
    """The account above is worth trusting: a stuck row, an orphan chunk and an orphan object each fail it."""
    h = harness
    doc_id = h.upload("a.txt", paragraphs(3))
    with pytest.raises(AssertionError, match="documents left"):
        settled(h)
    h.run_pipeline(doc_id)
    settled(h)
    h.ctx.store.put(f"rag/{h.kb.collection_name}/{uuid.uuid4()}_stray.txt", b"x")
    with pytest.raises(AssertionError, match="files no document holds"):
        settled(h)
    h.ctx.store.delete_many(h.keys(f"rag/{h.kb.collection_name}/"))
    with transaction() as conn:
        conn.execute("UPDATE documents SET status = 'error', error_message = 'x' WHERE id = %s", (doc_id,))
    with pytest.raises(AssertionError, match="chunks of documents"):
        settled(h)
