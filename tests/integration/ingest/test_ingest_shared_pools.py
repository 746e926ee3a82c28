"""One document shared into several users' private pools (R-ACC-6), through the real stages and the
real embedded PostgreSQL: one stored object, one parse, one embedding pass; a recipient check before
the top-k on both sides of the candidate pool; delete per recipient; the cap all or nothing.

The HTTP face (every document route's 404, the objects after the last delete, the presigned
variant) is tests/e2e/test_shared_pools_http.py.
"""

from __future__ import annotations

import io
import threading
import uuid
import zipfile

import pytest

from sluice.db import recipients as recipient_repo
from sluice.db.connection import transaction
from sluice.errors import CollectionNotFoundError, DocCapReachedError, RateLimitError, ValidationError
from sluice.identity import Principal
from sluice.ingest import documents
from sluice.ingest import parse as parse_stage
from sluice.ingest.uploads import DocumentFields, FileBytes, IntoSharedPool, SharePresignRequest, accept
from sluice.search.service import SearchRequest, search
from sluice.vectors import store as vector_store
from tests.integration.ingest.conftest import Harness, paragraphs

ORG, OTHER_ORG = "acme", "globex"
EDIT, VIEW = "collections:edit", "collections:view"


def member(user: str, org: str | None = ORG, *perms: str) -> Principal:
    return Principal(user_id=user, org_id=org, permissions=frozenset(perms), is_app_admin=False)


SHARER = member("sharer", ORG, VIEW, EDIT)
R1, R2, R3 = member("r1", ORG, VIEW), member("r2", ORG), member("r3", ORG, VIEW, EDIT)
FOURTH = member("fourth", ORG, VIEW, EDIT)
OUTSIDER = member("r1", OTHER_ORG, VIEW, EDIT)  # the same user id, in another organization


def share(h: Harness, data: bytes, recipients: list[str], name: str = "contract.txt",
          by: Principal = SHARER) -> uuid.UUID:
    # Small chunks, so one document is several embedding batches (the harness embeds two texts a batch).
    fields = DocumentFields(ingestion={"chunk_size": 300})
    return accept(h.intake(), by, IntoSharedPool(recipients), FileBytes(name, data, fields)).document.id


def chunks_of(doc_id: uuid.UUID) -> int:
    from sluice.db import documents as doc_repo

    with transaction() as conn:
        doc = doc_repo.get(conn, doc_id)
        assert doc is not None
        return vector_store.count_chunks(conn, doc.collection_name, doc_id)


def pool_search(h: Harness, p: Principal, collection: str, query: str, candidates: int = 8) -> set[uuid.UUID]:
    """The documents of the candidate pool (both sides, before ranking's gates) the caller's search reads."""
    with transaction() as conn:
        outcome = search(conn, p, SearchRequest(query=query, collections=[collection], candidates=candidates),
                         lambda spec: h.embedder)
    return {c.document_id for c in outcome.candidates}


def limits(h: Harness, **values: int) -> None:
    h.ctx.settings = h.ctx.settings.model_copy(update=values)


def test_shared_to_three_is_stored_parsed_and_embedded_once_and_read_by_exactly_its_recipients(
        harness: Harness, monkeypatch: pytest.MonkeyPatch):
    # GIVEN the parse and embedding providers counted: the isolated reader the parse stage runs once
    # per parse, and every text sent to the embedder
    parses: list[str] = []
    embedded: list[str] = []
    real_extract, real_embed = parse_stage.extract_isolated, harness.embedder.embed_documents

    def counted_parse(data, kind, budget, **_):
        parses.append(kind.kind)
        return real_extract(data, kind, budget)

    def counted_embed(texts):
        embedded.extend(texts)
        return real_embed(texts)

    monkeypatch.setattr(parse_stage, "extract_isolated", counted_parse)
    monkeypatch.setattr(harness.embedder, "embed_documents", counted_embed)
    text = paragraphs(6, topic="indemnity")

    # AND the same text shared with one user, as the measure of one pass
    alone = share(harness, text, ["r9"], name="alone.txt")
    harness.run_pipeline(alone)
    one_pass_calls, one_pass_texts = harness.embedder.calls, len(embedded)
    assert parses == ["txt"] and one_pass_calls >= 2 and one_pass_texts == chunks_of(alone) >= 3

    # WHEN it is shared with three users and the pipeline runs
    doc_id = share(harness, text, ["r1", "r2", "r3"])
    harness.run_pipeline(doc_id)

    # THEN it was parsed once and embedded in one pass: the calls and texts of one recipient, not three
    assert parses == ["txt", "txt"]
    assert harness.embedder.calls == 2 * one_pass_calls
    assert len(embedded) == 2 * one_pass_texts
    assert chunks_of(doc_id) == one_pass_texts
    doc = harness.document(doc_id)
    assert doc.status == "done", doc.error_message
    # AND one row, one stored original, one set of chunks
    with transaction() as conn:
        rows = conn.execute("SELECT count(*) AS n FROM documents WHERE kb_id = %s AND filename = 'contract.txt'",
                            (doc.kb_id,)).fetchone()
        assert rows["n"] == 1
        # the table holds the two documents' chunks: the measure's and this one's, once each
        assert vector_store.count_chunks(conn, doc.collection_name) == 2 * one_pass_texts
        assert recipient_repo.of(conn, doc_id) == ["r1", "r2", "r3"]
    stored = harness.keys(f"rag/{doc.collection_name}/")
    assert len(stored) == 2 and doc.storage_path in stored

    # AND each recipient's search reaches it; nobody else's does, the sharer's included
    for p in (R1, R2, R3):
        assert pool_search(harness, p, doc.collection_name, "indemnity audit ledger") == {doc_id}
    for p in (FOURTH, OUTSIDER, SHARER):
        with pytest.raises(CollectionNotFoundError):
            pool_search(harness, p, doc.collection_name, "indemnity audit ledger")
        with transaction() as conn, pytest.raises(CollectionNotFoundError):
            documents.get_document(conn, p, str(doc_id))


def test_the_recipient_check_holds_before_the_top_k_on_both_sides(harness: Harness):
    # GIVEN a pool where twelve documents shared with someone else all hold the query's words
    limits(harness, upload_rate_per_minute=1000, upload_rate_per_day=1000, private_doc_cap=1000)
    for i in range(12):
        other = share(harness, f"Zebra crossing rules, clause {i}: every zebra crossing is painted white.".encode()
                      + b" " + paragraphs(1, topic="zebra"), ["r2"], name=f"other{i}.txt")
        harness.run_pipeline(other)
    # AND one, with the same words, shared with r1
    mine = share(harness, b"Zebra crossing rules for r1: the zebra crossing by the depot is repainted yearly.",
                 ["r1"], name="mine.txt")
    harness.run_pipeline(mine)
    collection = harness.document(mine).collection_name

    # WHEN r1 searches with a pool of one candidate a side
    with transaction() as conn:
        outcome = search(conn, R1, SearchRequest(query="zebra crossing", collections=[collection], candidates=1),
                         lambda spec: harness.embedder)

    # THEN the one vector candidate and the one text candidate are both r1's: the check ran before either top-k
    assert {c.document_id for c in outcome.candidates} == {mine}
    assert set(outcome.candidates[0].found_by) == {"vector", "text"}
    # AND r2 reaches only their twelve
    assert mine not in pool_search(harness, R2, collection, "zebra crossing", candidates=50)
    assert len(pool_search(harness, R2, collection, "zebra crossing", candidates=50)) == 12


def test_recipients_delete_one_by_one_and_the_last_takes_row_chunks_and_recipients(harness: Harness):
    doc_id = share(harness, paragraphs(4, topic="warranty"), ["r1", "r2", "r3"])
    harness.run_pipeline(doc_id)
    collection = harness.document(doc_id).collection_name
    chunks = chunks_of(doc_id)
    assert chunks > 0

    # WHEN two recipients delete it
    for p in (R1, R2):
        with transaction() as conn:
            removal = documents.remove_document(conn, p, str(doc_id))
        assert removal.gone is False
    # THEN they reach it no more (their next search proves it), and the third still finds it
    for p in (R1, R2):
        with pytest.raises(CollectionNotFoundError):
            pool_search(harness, p, collection, "warranty audit ledger")
        with transaction() as conn, pytest.raises(CollectionNotFoundError):
            documents.get_document(conn, p, str(doc_id))
    assert pool_search(harness, R3, collection, "warranty audit ledger") == {doc_id}
    assert chunks_of(doc_id) == chunks

    # WHEN the third deletes it: no row, no chunk, no recipient row remains
    with transaction() as conn:
        removal = documents.remove_document(conn, R3, str(doc_id))
    assert removal.gone is True
    assert harness.document(doc_id) is None
    with transaction() as conn:
        assert vector_store.count_chunks(conn, collection, doc_id) == 0
        assert recipient_repo.of(conn, doc_id) == []


def test_the_sharer_revokes_one_recipient_and_deletes_for_all_but_never_reads_it(harness: Harness):
    doc_id = share(harness, paragraphs(3, topic="escrow"), ["r1", "r2"])
    harness.run_pipeline(doc_id)
    collection = harness.document(doc_id).collection_name
    # Another editor of the organization is not the sharer: revoke and delete answer as absent
    for p in (FOURTH, R1, member("sharer", OTHER_ORG, EDIT), member("sharer", ORG, VIEW)):
        with transaction() as conn, pytest.raises(CollectionNotFoundError):
            documents.revoke_recipient(conn, p, str(doc_id), "r1")
        with transaction() as conn, pytest.raises(CollectionNotFoundError):
            documents.delete_shared(conn, p, str(doc_id))
    with transaction() as conn:
        assert documents.revoke_recipient(conn, SHARER, str(doc_id), "r1").gone is False
    with pytest.raises(CollectionNotFoundError):
        pool_search(harness, R1, collection, "escrow audit ledger")
    assert pool_search(harness, R2, collection, "escrow audit ledger") == {doc_id}
    with transaction() as conn:
        assert documents.delete_shared(conn, SHARER, str(doc_id)).gone is True
    assert harness.document(doc_id) is None
    with transaction() as conn:
        assert vector_store.count_chunks(conn, collection, doc_id) == 0


def test_a_full_recipient_refuses_the_share_for_everyone_and_nobody_goes_over_the_cap(harness: Harness):
    limits(harness, private_doc_cap=2, upload_rate_per_minute=100)
    # GIVEN r1 holds two shared documents (at the cap) and r2 one
    share(harness, b"first words", ["r1", "r2"])
    share(harness, b"second words", ["r1"])

    # WHEN a document is shared with r1, r2 and r3
    with pytest.raises(DocCapReachedError) as refused:
        share(harness, b"third words", ["r1", "r2", "r3"])

    # THEN the refusal names the full recipient only, and nothing was written for anyone
    assert refused.value.status == 409 and refused.value.code == "DOC_CAP_REACHED"
    assert refused.value.details["recipients"] == ["r1"]
    assert "r1" in refused.value.message
    with transaction() as conn:
        counts = {u: recipient_repo.shared_with(conn, u) for u in ("r1", "r2", "r3")}
        rows = conn.execute("SELECT count(*) AS n FROM documents WHERE filename = 'contract.txt'").fetchone()["n"]
        events = {u: conn.execute("SELECT count(*) AS n FROM upload_events WHERE user_id = %s",
                                  (u,)).fetchone()["n"] for u in ("r1", "r2", "r3")}
    assert counts == {"r1": 2, "r2": 1, "r3": 0}
    assert rows == 2 and events == {"r1": 2, "r2": 1, "r3": 0}
    # AND without the full recipient it goes to the others, and r2 is then at the cap too
    share(harness, b"third words", ["r2", "r3"])
    with pytest.raises(DocCapReachedError) as refused:
        share(harness, b"fourth words", ["r3", "r2", "r1"])
    assert refused.value.details["recipients"] == ["r2", "r1"]
    with transaction() as conn:
        assert max(recipient_repo.shared_with(conn, u) for u in ("r1", "r2", "r3")) <= 2


def test_concurrent_shares_to_one_nearly_full_pool_never_put_it_over(harness: Harness):
    limits(harness, private_doc_cap=3, upload_rate_per_minute=100)
    share(harness, b"held words", ["r1"])
    outcomes: list[str] = []
    start = threading.Barrier(6)

    def attempt(i: int) -> None:
        start.wait()
        try:
            share(harness, f"racing words {i}".encode(), ["r1", f"x{i}"])
            outcomes.append("ok")
        except DocCapReachedError:
            outcomes.append("full")

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["full"] * 4 + ["ok"] * 2
    with transaction() as conn:
        assert recipient_repo.shared_with(conn, "r1") == 3


def test_the_rate_limit_counts_a_share_for_each_recipient_and_names_who_is_over(harness: Harness):
    limits(harness, upload_rate_per_minute=2, private_doc_cap=100)
    share(harness, b"one", ["r1", "r2"])
    share(harness, b"two", ["r1"])
    with pytest.raises(RateLimitError) as refused:
        share(harness, b"three", ["r2", "r1"])
    assert refused.value.details["recipients"] == ["r1"]
    assert 1 <= int(refused.value.headers["Retry-After"]) <= 60
    share(harness, b"three", ["r2"])  # r2 had one: the refused share counted for nobody


def test_who_may_share_and_with_whom(harness: Harness):
    for p in (member("viewer", ORG, VIEW), member("lonely", None, VIEW, EDIT)):
        with pytest.raises(ValidationError) as refused:
            share(harness, b"words", ["r1"], by=p)
        assert "recipients" in refused.value.details["fields"]
    for bad in ([], [""], ["r1\x00"], ["x" * 201]):
        with pytest.raises(ValidationError):
            share(harness, b"words", bad)
    limits(harness, pool_max_recipients=3)
    with pytest.raises(ValidationError) as refused:
        share(harness, b"words", ["a", "b", "c", "d"])
    assert "at most 3" in refused.value.details["fields"]["recipients"]
    # Duplicates are one recipient
    doc_id = share(harness, b"words", ["r1", "r1 ", "r2"])
    with transaction() as conn:
        assert recipient_repo.of(conn, doc_id) == ["r1", "r2"]


def test_the_kill_switch_and_sniffing_apply_to_shares(harness: Harness):
    from sluice.errors import IndexingPausedError, UnsupportedTypeError

    with pytest.raises(UnsupportedTypeError):
        # A renamed program (a PDF named .txt is read as the PDF it is since R-UP-6's revision).
        share(harness, b"MZ\x90\x00\x03" + b"\x00" * 200, ["r1"], name="notes.txt")
    limits(harness, indexing_paused=True)
    with pytest.raises(IndexingPausedError):
        share(harness, b"words", ["r1"])
    with pytest.raises(IndexingPausedError):
        accept(harness.intake(), SHARER, IntoSharedPool(["r1"]),
               SharePresignRequest(filename="a.txt", size=5, recipients=["r1"]))
    with transaction() as conn:
        assert conn.execute("SELECT count(*) AS n FROM document_recipients").fetchone()["n"] == 0


def test_a_shared_archive_shares_each_member_with_the_same_recipients(harness: Harness):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.txt", paragraphs(2, topic="alpha").decode())
        z.writestr("b.md", paragraphs(2, topic="beta").decode())
    limits(harness, private_doc_cap=3)
    # An archive is itself and each member: three documents in each recipient's pool
    share(harness, b"x", ["r1"])
    with pytest.raises(DocCapReachedError) as refused:
        share(harness, buf.getvalue(), ["r1", "r2"], name="bundle.zip")
    assert refused.value.details["recipients"] == ["r1"] and refused.value.details["requested"] == 3
    archive = share(harness, buf.getvalue(), ["r2", "r3"], name="bundle.zip")
    harness.deliver(harness.parse_message(archive))
    with transaction() as conn:
        members = conn.execute("SELECT id FROM documents WHERE source_path LIKE 'bundle.zip!/%%'").fetchall()
        assert len(members) == 2
        for m in members:
            assert recipient_repo.of(conn, m["id"]) == ["r2", "r3"]
        assert recipient_repo.shared_with(conn, "r2") == 3


def test_an_inbox_drop_into_a_shared_pool_opens_nothing(harness: Harness):
    # A drop names no recipients: in a shared pool it would be a document nobody may read or delete
    doc_id = share(harness, b"words", ["r1"])
    kb_id = harness.document(doc_id).kb_id
    key = f"inbox/{kb_id}/dropped.txt"
    harness.moto.s3.put_object(Bucket=harness.moto.name, Key=key, Body=paragraphs(2))
    harness.deliver(("ingest", harness.object_event(key)))
    with transaction() as conn:
        rows = conn.execute("SELECT count(*) AS n FROM documents WHERE kb_id = %s", (kb_id,)).fetchone()["n"]
    assert rows == 1
