"""Teardowns (SPEC §11, R-TD-1..3): a base's or a collection's teardown removes everything of it and
nothing of anyone else's, every step is idempotent, and the receipt counts what existed.

The steps run in this process here (``run_all``, the same tasks the state machine calls); the
e2e tests run them through the state machine, the sweep and the routes."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from psycopg import sql

from sluice.bases import CreateKnowledgeBase, claim_name, create_base
from sluice.config import get_settings
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db import name_locks
from sluice.db.connection import transaction
from sluice.errors import CollectionNotFoundError, ConflictError, NameBusyError, NotFoundError, ValidationError
from sluice.identity import Principal
from sluice.storage import ObjectStore, incoming_key
from sluice.teardown import (
    TeardownContext,
    get_receipt,
    request_base_teardown,
    request_collection_teardown,
    request_operator_drop,
    restart_stalled,
    run_all,
    run_step,
    start_workflow,
    summary,
)
from sluice.vectors import store
from tests.integration.teardown.conftest import World, editor, owner, text

SETTINGS = get_settings


def a_chunk_of(collection: str, kb_id: uuid.UUID) -> str:
    with transaction() as conn:
        row = conn.execute(sql.SQL("SELECT content FROM {} WHERE kb_id = %s ORDER BY id LIMIT 1").format(
            sql.Identifier(f"rag_{collection}")), (kb_id,)).fetchone()
    assert row is not None
    return str(row["content"])


def tear_down_base(world: World, kb, who: Principal | None = None):
    with transaction() as conn:
        td = request_base_teardown(conn, who or world.writer_of(kb), str(kb.id), SETTINGS())
    return td


def counts(kb_id: uuid.UUID) -> dict[str, int]:
    with transaction() as conn:
        return doc_repo.status_counts(conn, kb_ids=[kb_id])


# --- nothing of anyone else's --------------------------------------------------------------------

def test_two_organizations_on_one_name_deleting_one_leaves_the_other_searchable_and_counted(world: World):
    name = "shared_handbook"
    acme = world.base(name, org="acme")
    # The vector namespace is deployment-wide: two tenants' bases can share one table (seed 000, #913).
    globex = world.base(name, org="globex")
    world.ingest(acme, "acme.txt", text("acme"))
    world.ingest(globex, "globex.txt", text("globex"))
    world.ingest(globex, "annex.txt", text("globex annex", 3))
    acme_chunks, globex_chunks = world.chunks(name, acme.id), world.chunks(name, globex.id)
    assert acme_chunks > 0 and globex_chunks > 0
    globex_objects = world.objects_of(world.document_ids(globex))
    globex_counts = counts(globex.id)
    probe = a_chunk_of(name, globex.id)
    assert probe in world.search(editor("globex"), name, probe)

    td = tear_down_base(world, acme)
    assert td.drop_table is False  # a sibling holds the name
    done = world.run(td)

    assert done.state == "done" and done.table_dropped is False
    assert world.chunks(name, acme.id) == 0
    assert world.chunks(name, globex.id) == globex_chunks
    assert world.objects_of(world.document_ids(globex)) == globex_objects
    assert counts(globex.id) == globex_counts
    assert probe in world.search(editor("globex"), name, probe)
    assert done.chunks_removed == acme_chunks and done.documents_removed == 1
    with transaction() as conn:
        assert kb_repo.get(conn, acme.id) is None and kb_repo.get(conn, globex.id) is not None
    # acme's own search of the name now finds no base of theirs
    with pytest.raises(CollectionNotFoundError):
        world.search(editor("acme"), name, probe)


def _sync_tables(conn) -> None:
    """Issue 14's two tables, as far as the teardown reads them, where its migration has not made them
    (with it, the real ones are used: the inserts below fill the columns they require)."""
    conn.execute("CREATE TABLE IF NOT EXISTS sync_sources (id uuid PRIMARY KEY, kb_id uuid NOT NULL, "
                 "name text NOT NULL, connector text NOT NULL, config jsonb NOT NULL, created_by text NOT NULL)")
    conn.execute("CREATE TABLE IF NOT EXISTS document_claims (source_id uuid NOT NULL, document_id uuid NOT NULL, "
                 "source_path text NOT NULL, PRIMARY KEY (source_id, document_id))")


def _source(conn, source_id: uuid.UUID, kb_id: uuid.UUID, document_id: uuid.UUID) -> None:
    conn.execute("INSERT INTO sync_sources (id, kb_id, name, connector, config, created_by) "
                 "VALUES (%s, %s, 'share', 's3', '{}'::jsonb, 'ann')", (source_id, kb_id))
    conn.execute("INSERT INTO document_claims (source_id, document_id, source_path) VALUES (%s, %s, 's3://x/y')",
                 (source_id, document_id))


def test_after_a_base_teardown_nothing_of_it_is_left_and_the_receipt_counts_what_was_there(world: World):
    kb = world.base("runbooks", org="acme")
    other = world.base("elsewhere", org="acme")
    uploaded = [world.ingest(kb, f"runbook_{i}.txt", text(f"runbook {i}", 3 + i)) for i in range(3)]
    kept = world.ingest(other, "other.txt", text("other base"))
    # a presigned upload whose POST landed but was not moved yet, an S3 drop, and a stray inbox object
    from sluice.ingest.uploads import IntoBase, PresignRequest, accept

    presigned = accept(world.intake(), world.writer_of(kb), IntoBase(str(kb.id)),
                       PresignRequest(filename="late.txt", size=100)).document
    world.stages.store.put(incoming_key(presigned.id, "late.txt"), b"late bytes")
    dropped = f"inbox/{kb.id}/team/notes.txt"
    world.stages.store.put(dropped, text("dropped notes"))
    from sluice.ingest.routing import on_ingest_item

    on_ingest_item(world.stages, world.event(dropped))
    world.pipeline(world.document_ids(kb).difference(uploaded, {presigned.id}).pop(), dropped)
    world.stages.store.put(f"inbox/{kb.id}/stray.txt", b"never announced")
    with transaction() as conn:
        _sync_tables(conn)
        for sid in (uuid.uuid4(), uuid.uuid4()):
            _source(conn, sid, kb.id, uploaded[0])
        other_source = uuid.uuid4()
        _source(conn, other_source, other.id, kept)

    docs = world.document_ids(kb)
    assert len(docs) == 5
    before_objects = {**world.objects_of(docs), **world.objects(f"inbox/{kb.id}/"),
                      **world.objects(f"incoming/{presigned.id}/")}
    before_chunks = world.chunks("runbooks")
    assert before_chunks > 0 and len(before_objects) >= 14
    others_objects = world.objects_of({kept})

    done = world.run(tear_down_base(world, kb))

    assert done.state == "done" and done.table_dropped is True
    with transaction() as conn:
        assert doc_repo.count_for_kb(conn, kb.id) == 0
        assert doc_repo.count_existing(conn, list(docs)) == 0
        assert not store.table_exists(conn, "runbooks")
        left_sources = conn.execute("SELECT id FROM sync_sources").fetchall()
        left_claims = conn.execute("SELECT source_id FROM document_claims").fetchall()
    assert [r["id"] for r in left_sources] == [other_source]
    assert [r["source_id"] for r in left_claims] == [other_source]
    everything = world.objects()
    assert not [k for k in everything if k in before_objects or str(kb.id) in k or any(str(d) in k for d in docs)]
    assert world.objects_of({kept}) == others_objects
    assert summary(done)["removed"] == {
        "documents": 5, "chunks": before_chunks, "objects": len(before_objects),
        "bytes": sum(before_objects.values()), "sync_sources": 2,
    }
    assert done.left_over == {"documents": 0, "chunks": 0, "documents_with_objects": 0, "sync_sources": 0}
    with transaction() as conn:
        assert not kb_repo.teardown_reserved(conn, "runbooks")


def test_without_sync_tables_the_sources_step_finds_none(world: World):
    kb = world.base("no_sync_yet", org="acme")
    world.ingest(kb, "a.txt", text("plain"))
    done = world.run(tear_down_base(world, kb))
    assert done.state == "done" and done.sync_sources_removed == 0 and done.sync_source_ids == []


# --- a default base -------------------------------------------------------------------------------

def test_a_default_base_is_cleared_search_answers_empty_and_the_next_upload_recreates_the_table(world: World):
    default = world.base("acme_default", org="acme", is_default=True)
    world.ingest(default, "policy.txt", text("policy"))
    probe = a_chunk_of("acme_default", default.id)

    done = world.run(tear_down_base(world, default))

    assert done.state == "done" and done.table_dropped is True and done.cleared_kb_ids == [default.id]
    assert summary(done)["knowledge_bases"][0]["action"] == "cleared"
    with transaction() as conn:
        kept = kb_repo.get(conn, default.id)
        assert kept is not None and kept.is_default
        assert doc_repo.count_for_kb(conn, default.id) == 0
        assert not store.table_exists(conn, "acme_default")
    assert world.search(editor("acme"), "acme_default", probe) == []

    after = world.ingest(default, "after.txt", text("after the clear"))
    fresh = a_chunk_of("acme_default", default.id)
    assert world.chunks("acme_default", default.id) > 0
    assert fresh in world.search(editor("acme"), "acme_default", fresh)

    # Re-running the finished teardown changes nothing: the write made after it stays.
    receipt = summary(done)
    chunks = world.chunks("acme_default")
    again = run_all(world.teardowns, done.id)
    assert summary(again)["removed"] == receipt["removed"] and again.state == "done"
    for step in ("chunks", "sources", "objects", "release"):
        assert run_step(world.teardowns, step, done.id)["more"] is False
    assert world.chunks("acme_default") == chunks
    assert world.document_ids(default) == {after}
    assert summary(world.teardown(done.id)) == {**receipt, "attempts": receipt["attempts"]}


def test_rerunning_a_finished_teardown_changes_nothing(world: World):
    name = "handbook_rerun"
    a, b = world.base(name, org="acme"), world.base(name, org="globex")
    world.ingest(a, "a.txt", text("first"))
    world.ingest(b, "b.txt", text("second"))
    done = world.run(tear_down_base(world, a))
    receipt = summary(done)
    objects, chunks = world.objects(), world.chunks(name)

    again = run_all(world.teardowns, done.id)

    assert again.state == "done"
    assert summary(world.teardown(done.id)) == receipt  # not even the receipt moves
    assert world.objects() == objects and world.chunks(name) == chunks


# --- the reservation (R-TD-1) ------------------------------------------------------------------------

def test_claims_and_uploads_on_a_reserved_name_are_refused_until_the_release(world: World):
    name = "reserved_name"
    a = world.base(name, org="acme")
    sibling = world.base(name, org="globex")
    world.ingest(a, "a.txt", text("reserved"))
    td = tear_down_base(world, a)  # committed: rows gone, name reserved, no step run yet

    body = CreateKnowledgeBase(name="Again", collection_name=name, scope="org")
    with transaction() as conn, pytest.raises(ConflictError) as refused:
        create_base(conn, editor("globex"), body)
    assert "teardown" in refused.value.details["fields"]["collection_name"]
    with pytest.raises(ConflictError, match="torn down"):
        world.upload(sibling, "b.txt", text("sibling"))
    with transaction() as conn:
        assert kb_repo.teardown_reserved(conn, name)

    world.run(td)
    with transaction() as conn:
        assert not kb_repo.teardown_reserved(conn, name)
        assert claim_name(conn, editor("globex"), name)[0].id == sibling.id
    world.ingest(sibling, "b.txt", text("sibling"))


def test_a_write_reaching_a_name_reserved_for_its_drop_writes_nothing(world: World):
    name = "mid_flight"
    kb = world.base(name, org="acme", is_default=True)
    doc_id = world.upload(kb, "late.txt", text("late"))
    with transaction() as conn:
        doc = doc_repo.get(conn, doc_id)
        # a sync's or a retry's row the request did not see, under a name reserved for its drop
        conn.execute("INSERT INTO collection_teardowns (id, collection_name, drop_table, requested_by) "
                     "VALUES (%s, %s, true, 'someone')", (uuid.uuid4(), name))
    assert doc is not None and doc.storage_path
    world.pipeline(doc_id, doc.storage_path)

    with transaction() as conn:
        row = doc_repo.get(conn, doc_id)
        assert row is not None and row.status == "error"
        assert "torn down" in (row.error_message or "")
        assert not store.table_exists(conn, name)


def test_a_sibling_teardown_leaves_a_write_of_another_base_alone(world: World):
    name = "busy_name"
    a, b = world.base(name, org="acme"), world.base(name, org="globex")
    world.ingest(a, "a.txt", text("a"))
    doc_id = world.upload(b, "b.txt", text("b in flight"))  # accepted before the teardown
    td = tear_down_base(world, a)
    with transaction() as conn:
        doc = doc_repo.get(conn, doc_id)
    assert doc is not None and doc.storage_path
    world.pipeline(doc_id, doc.storage_path)
    world.run(td)
    with transaction() as conn:
        done = doc_repo.get(conn, doc_id)
    assert done is not None and done.status == "done"
    assert world.chunks(name, b.id) == done.chunk_count > 0


# --- locks (R-TD-3) --------------------------------------------------------------------------------

def test_a_create_on_a_name_a_write_holds_waits_briefly_then_409_with_a_retry_hint(world: World):
    name = "held_name"
    world.base(name, org="acme")
    with transaction() as writer:
        name_locks.hold_for_write(writer, name)  # as the embed stage's chunk write does
        started = time.monotonic()
        with transaction() as conn, pytest.raises(NameBusyError) as busy:
            create_base(conn, editor("acme"), CreateKnowledgeBase(name="x", collection_name=name, scope="org"))
        waited = time.monotonic() - started
    assert 0.9 <= waited < 5
    assert busy.value.status == 409 and busy.value.code == "CONFLICT"
    assert int(busy.value.headers["Retry-After"]) >= 1 and busy.value.details["retry_after"] >= 1
    with transaction() as conn:  # the write committed: the name is free to claim
        claim_name(conn, editor("acme"), name)


def test_a_delete_waits_for_a_running_write_and_a_write_waits_for_a_deciding_delete(world: World):
    name = "ordered_name"
    kb = world.base(name, org="acme")
    world.ingest(kb, "a.txt", text("a"))
    result: dict[str, object] = {}

    def delete() -> None:
        result["td"] = tear_down_base(world, kb)

    writer = transaction()
    conn = writer.__enter__()
    name_locks.hold_for_write(conn, name)
    thread = threading.Thread(target=delete)
    thread.start()
    thread.join(1.0)
    assert thread.is_alive() and "td" not in result  # waiting for the write
    writer.__exit__(None, None, None)
    thread.join(10)
    assert "td" in result

    # and the other way round: a chunk write waits while a claim or a delete holds the name
    other = world.base("ordered_other", org="acme")
    doc_id = world.upload(other, "b.txt", text("b"))
    with transaction() as conn2:
        doc = doc_repo.get(conn2, doc_id)
    assert doc is not None and doc.storage_path
    with transaction() as decider:
        assert name_locks.take(decider, "ordered_other", wait_seconds=1)
        ingest = threading.Thread(target=world.pipeline, args=(doc_id, doc.storage_path))
        ingest.start()
        ingest.join(2.0)
        assert ingest.is_alive()
        with transaction() as conn2:
            waiting = doc_repo.get(conn2, doc_id)
        assert waiting is not None and waiting.status == "processing"
    ingest.join(20)
    with transaction() as conn2:
        written = doc_repo.get(conn2, doc_id)
    assert written is not None and written.status == "done"


# --- whose unfiled content goes (seed 000, "deleting a base") ---------------------------------------

def _unfiled(name: str, org: str | None, content: str) -> uuid.UUID:
    """A row and a chunk no base files, as an operator's ingest leaves them."""
    from tests.fakes import DIM

    doc_id = uuid.uuid4()
    with transaction() as conn:
        doc_repo.insert(conn, id=doc_id, kb_id=None, org_id=org, collection_name=name, filename=f"{content}.txt",
                        status="done", stage="done", vector_document_id=doc_id, chunk_count=1)
        store.ensure_table(conn, name, DIM)
        store.insert_chunks(conn, name, [store.ChunkRow(document_id=doc_id, kb_id=None, org_id=org, chunk_index=0,
                                                        content=content, embedding=[1.0] + [0.0] * (DIM - 1))])
    return doc_id


def test_a_route_keeps_the_table_for_another_tenants_unfiled_chunk_and_takes_its_own_tenants(world: World):
    name = "unfiled_mix"
    kb = world.base(name, org="acme")
    world.ingest(kb, "a.txt", text("acme"))
    ours = _unfiled(name, "acme", "acme operator note")
    theirs = _unfiled(name, "globex", "globex operator note")

    td = tear_down_base(world, kb)
    assert td.drop_table is False and td.documents_removed == 2
    done = world.run(td)

    assert done.state == "done" and done.table_dropped is False
    with transaction() as conn:
        assert doc_repo.get(conn, ours) is None
        kept = doc_repo.get(conn, theirs)
        assert kept is not None and kept.status == "done"
        assert store.count_chunks(conn, name) == 1 and store.count_chunks(conn, name, theirs) == 1


def test_a_personal_base_takes_none_of_its_organizations_unfiled_content(world: World):
    """Issue 26, finding 5: a member with no permissions claims a name holding the organization's
    unfiled rows for a personal base, then deletes it; only the base's own rows go with it."""
    name = "unfiled_claimed"
    ours = _unfiled(name, "acme", "acme operator note")
    ned = owner("ned", "acme")  # a member of acme with no permissions
    with transaction() as conn:
        kb = create_base(conn, ned, CreateKnowledgeBase(name="Mine", collection_name=name))
    own = world.ingest(kb, "ned.txt", text("ned"))

    td = tear_down_base(world, kb, ned)
    assert td.documents_removed == 1 and td.drop_table is False
    done = world.run(td)

    assert done.state == "done" and done.table_dropped is False and done.unfiled_documents_failed == 0
    with transaction() as conn:
        assert doc_repo.get(conn, own) is None
        kept = doc_repo.get(conn, ours)
        assert kept is not None and kept.status == "done"
        assert store.count_chunks(conn, name) == 1 and store.count_chunks(conn, name, ours) == 1

    # The collection route tears down through the same rule.
    with transaction() as conn:
        again = create_base(conn, ned, CreateKnowledgeBase(name="Mine again", collection_name=name))
    world.ingest(again, "ned.txt", text("ned again"))
    with transaction() as conn:
        td = request_collection_teardown(conn, ned, name, SETTINGS())
    assert td.documents_removed == 1 and world.run(td).table_dropped is False
    with transaction() as conn:
        assert doc_repo.get(conn, ours) is not None and store.count_chunks(conn, name, ours) == 1


def test_an_organization_base_takes_its_unfiled_content_though_a_members_personal_base_stays(world: World):
    """A personal base lists no unfiled row, so it shields none: the organization's base takes them."""
    name = "unfiled_beside_personal"
    org_base = world.base(name, org="acme")
    vics = world.base(name, scope="personal", org="acme", owner_id="vic")
    ours = _unfiled(name, "acme", "acme operator note")
    world.ingest(vics, "vic.txt", text("vic"))

    td = tear_down_base(world, org_base)
    assert td.documents_removed == 1 and td.drop_table is False
    world.run(td)
    with transaction() as conn:
        assert doc_repo.get(conn, ours) is None and store.count_chunks(conn, name, ours) == 0
    assert world.chunks(name, vics.id) > 0


def test_the_operators_drop_takes_the_last_holders_table_whatever_it_holds(world: World):
    name = "operator_drop"
    kb = world.base(name, org="acme")
    world.ingest(kb, "a.txt", text("acme"))
    theirs = _unfiled(name, "globex", "globex operator note")

    with transaction() as conn:
        td = request_operator_drop(conn, name, SETTINGS())
    assert td.drop_table is True
    done = world.run(td)

    assert done.state == "done" and done.unfiled_documents_failed == 1
    with transaction() as conn:
        assert not store.table_exists(conn, name)
        left = doc_repo.get(conn, theirs)  # another tenant's row stays, marked: its chunks are gone
        assert left is not None and left.status == "error" and "upload it again" in (left.error_message or "")


def test_the_operators_drop_names_the_base_when_several_hold_the_name(world: World):
    name = "two_holders"
    a, b = world.base(name, org="acme"), world.base(name, org="globex")
    world.ingest(a, "a.txt", text("a"))
    world.ingest(b, "b.txt", text("b"))
    with transaction() as conn, pytest.raises(ConflictError) as refused:
        request_operator_drop(conn, name, SETTINGS())
    assert sorted(refused.value.details["knowledge_bases"]) == sorted([str(a.id), str(b.id)])
    with transaction() as conn, pytest.raises(ValidationError):
        request_operator_drop(conn, name, SETTINGS(), kb_id=str(uuid.uuid4()))

    with transaction() as conn:
        td = request_operator_drop(conn, name, SETTINGS(), kb_id=str(b.id))
    done = world.run(td)
    assert done.table_dropped is False and world.chunks(name, b.id) == 0 and world.chunks(name, a.id) > 0


def test_the_operators_drop_of_a_name_no_base_holds_takes_its_rows_and_table(world: World):
    name = "legacy_ingest"
    rows = [_unfiled(name, None, "legacy one"), _unfiled(name, "globex", "legacy two")]
    with transaction() as conn:
        td = request_operator_drop(conn, name, SETTINGS())
    done = world.run(td)
    assert done.documents_removed == 2 and done.chunks_removed == 2 and done.table_dropped is True
    with transaction() as conn:
        assert doc_repo.count_existing(conn, rows) == 0
    with transaction() as conn, pytest.raises(NotFoundError):
        request_operator_drop(conn, name, SETTINGS())


# --- who may delete, who may read the receipt ----------------------------------------------------------

def test_a_collection_delete_takes_the_bases_the_caller_writes_and_leaves_the_others(world: World):
    name = "mixed_writers"
    org_base = world.base(name, org="acme")
    vics = world.base(name, scope="personal", org="acme", owner_id="vic")
    world.ingest(org_base, "org.txt", text("org"))
    world.ingest(vics, "vic.txt", text("vic"))
    viewer = Principal("val", "acme", frozenset({"collections:view"}), False)

    with transaction() as conn, pytest.raises(CollectionNotFoundError):
        request_collection_teardown(conn, viewer, name, SETTINGS())  # reads, writes none: absent
    with transaction() as conn:
        td = request_collection_teardown(conn, editor("acme", "ann"), name, SETTINGS())
    assert td.deleted_kb_ids == [org_base.id] and td.drop_table is False
    world.run(td)
    assert world.chunks(name, vics.id) > 0 and world.chunks(name, org_base.id) == 0

    with transaction() as conn:
        td = request_collection_teardown(conn, owner("vic", "acme"), name, SETTINGS())
    assert td.deleted_kb_ids == [vics.id] and td.drop_table is True
    assert world.run(td).table_dropped is True


def test_a_receipt_is_read_by_its_requester_and_the_bases_writers_only(world: World):
    kb = world.base("receipt_reach", org="acme")
    done = world.run(tear_down_base(world, kb, editor("acme", "ann")))
    readers = [editor("acme", "ann"), editor("acme", "ava")]
    refused = [Principal("val", "acme", frozenset({"collections:view"}), False), editor("globex", "gus"),
               Principal("root", None, frozenset(), True)]
    with transaction() as conn:
        for p in readers:
            assert get_receipt(conn, p, str(done.id)).id == done.id
        for p in refused:
            with pytest.raises(CollectionNotFoundError):
                get_receipt(conn, p, str(done.id))
        with pytest.raises(CollectionNotFoundError):
            get_receipt(conn, readers[0], str(uuid.uuid4()))
        with pytest.raises(CollectionNotFoundError):
            get_receipt(conn, readers[0], "not-a-uuid")


# --- failures, restarts, the sweep ---------------------------------------------------------------------

class RefusingStore(ObjectStore):
    """S3 refusing every delete the first ``times`` calls (an outside provider failing)."""

    def __init__(self, inner: ObjectStore, times: int) -> None:
        super().__init__(inner._s3, inner.bucket, inner.kms_key_id)  # noqa: SLF001 - the same client
        self.times = times

    def _delete_objects(self, batch: list[dict[str, str]]) -> list[str]:
        if self.times > 0:
            self.times -= 1
            return [b["Key"] for b in batch]
        return super()._delete_objects(batch)


def test_a_failed_step_keeps_the_reservation_and_a_rerun_finishes_without_counting_twice(world: World):
    kb = world.base("refused_deletes", org="acme")
    docs = {world.ingest(kb, f"d{i}.txt", text(f"doc {i}")) for i in range(2)}
    objects = world.objects_of(docs)
    refusing = TeardownContext(uow=transaction, store=RefusingStore(world.teardowns.store, 1),
                               settings=world.teardowns.settings)
    td = tear_down_base(world, kb)

    failed = run_all(refusing, td.id)

    assert failed.state == "failed" and failed.failed_step == "objects"
    receipt = summary(failed)
    assert receipt["error"] == {"step": "objects", "reason": failed.last_error}
    assert "objects step failed (ObjectsNotDeletedError)" in (failed.last_error or "")
    with transaction() as conn:
        assert kb_repo.teardown_reserved(conn, "refused_deletes")

    done = world.run(failed)
    assert done.state == "done" and done.objects_removed == len(objects)
    assert done.bytes_removed == sum(objects.values())
    assert [e["event"] for e in done.history] == ["requested", "started", "failed", "started", "done"]
    assert world.objects_of(docs) == {}


def test_the_sweep_starts_again_a_teardown_whose_workflow_never_started(world: World):
    kb = world.base("lost_start", org="acme")
    world.ingest(kb, "a.txt", text("lost"))
    td = tear_down_base(world, kb)
    lost = start_workflow(transaction, None, td)  # as if the start failed after the commit
    assert lost.state == "running" and "could not be started" in (lost.last_error or "")

    class InProcess:
        started: list[str] = []

        def start(self, name: str, payload: dict) -> str:
            self.started.append(name)
            run_all(world.teardowns, uuid.UUID(payload["teardown_id"]))
            return f"in-process:{name}"

    workflow = InProcess()
    from datetime import UTC, datetime, timedelta

    hour = timedelta(hours=1)
    assert restart_stalled(transaction, workflow, older_than=hour) == []  # not an hour yet
    assert restart_stalled(transaction, workflow, older_than=hour, now=datetime.now(UTC) + 2 * hour) == [td.id]
    done = world.teardown(td.id)
    assert done.state == "done" and workflow.started == [f"teardown-{td.id}-2"]
    events = [e["event"] for e in done.history]
    assert events[:3] == ["requested", "started", "start failed"] and "restarted" in events and events[-1] == "done"
    restarted = next(e for e in done.history if e["event"] == "restarted")
    assert "no progress since" in restarted["reason"]
    # a released teardown is no reservation: the next sweep has nothing to do
    assert restart_stalled(transaction, workflow, older_than=hour, now=datetime.now(UTC) + 3 * hour) == []


# --- the runtime-table predicate ---------------------------------------------------------------------------

def test_the_collections_command_lists_runtime_tables_only(world: World, capsys):
    from sluice import cli

    kb = world.base("listed_one", org="acme")
    world.ingest(kb, "a.txt", text("listed"))
    with transaction() as conn:
        conn.execute("CREATE TABLE rag_Handbook (id int)")  # folded to rag_handbook by PostgreSQL
        conn.execute('CREATE TABLE "rag_Upper" (id int)')  # not a name a collection can have
        conn.execute("CREATE TABLE rag_documents (id int)")  # would be the tracking table's collection
        names = store.runtime_tables(conn)
    assert "listed_one" in names and "handbook" in names
    assert "Upper" not in names and "documents" not in names

    assert cli.main(["collections"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("listed_one"))
    assert str(kb.id) in row and str(world.chunks("listed_one")) in row
    assert "rag_documents" not in out and "Upper" not in out


def test_a_second_teardown_of_a_reserved_name_waits_for_the_first(world: World):
    name = "one_at_a_time"
    a, b = world.base(name, org="acme"), world.base(name, org="globex")
    first = tear_down_base(world, a)
    with pytest.raises(NameBusyError) as busy:
        tear_down_base(world, b)
    assert busy.value.status == 409 and int(busy.value.headers["Retry-After"]) > 0
    world.run(first)
    second = tear_down_base(world, b)
    assert second.drop_table is True  # now the last holder
    assert world.run(second).table_dropped is True
