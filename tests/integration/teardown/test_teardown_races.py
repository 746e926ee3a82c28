"""R-TD-3 under real concurrency: an upload (its row, its object, then every stage S3's events would
run) races a delete of its base (the request, then the teardown's steps), in both orders, 50
times each, on two threads against the real PostgreSQL and a moto S3.

Whatever the interleaving, afterwards there is never a chunk without its base (or without its
document's row), and never an object without its row. Half the rounds delete the last holder of
the name (the table is dropped), half a base beside a sibling (only its chunks go).

The parse stage reads in this process here rather than in its isolated child: the same reader,
without the half second a fresh interpreter costs, so a hundred rounds fit in a minute. What
races is the rows, the locks, the objects and the chunk write, all real.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest
from psycopg import sql

from sluice.config import get_settings
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db.connection import transaction
from sluice.errors import CollectionNotFoundError, ConflictError
from sluice.ingest import parse as parse_stage
from sluice.ingest.archive import unpack_archive
from sluice.ingest.runner import StaleEvent
from sluice.ingest.uploads import DocumentFields, accept_direct_upload
from sluice.parsing import extract, sniff
from sluice.teardown import request_base_teardown, run_all
from sluice.vectors import store
from tests.integration.teardown.conftest import World, text
from tests.unit.parsing.parsing_samples import zip_bytes

ROUNDS = 50
OBJECT_OF_ROW = ("text/", "stage/parsed/", "stage/chunks/", "incoming/")


def orphans(world: World) -> list[str]:
    """Objects no document row accounts for: an original no row stores, or a document's text,
    artifact or pending upload whose row is gone."""
    with transaction() as conn:
        rows = conn.execute("SELECT id, storage_path FROM documents").fetchall()
    ids = {str(r["id"]) for r in rows}
    paths = {r["storage_path"] for r in rows if r["storage_path"]}
    out = []
    for key in world.objects():
        if key.startswith("rag/"):
            if key not in paths:
                out.append(key)
        elif key.startswith(OBJECT_OF_ROW):
            name = key.split("/")[-1] if not key.startswith("incoming/") else key.split("/")[1]
            if name.split(".")[0] not in ids:
                out.append(key)
    return out


def homeless_chunks(collection: str) -> int:
    """Chunks whose base, or whose document's row, does not exist."""
    with transaction() as conn:
        if not store.table_exists(conn, collection):
            return 0
        row = conn.execute(sql.SQL(
            "SELECT count(*) AS n FROM {t} c WHERE NOT EXISTS (SELECT 1 FROM knowledge_bases k WHERE k.id = c.kb_id)"
            " OR NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = c.document_id)"
        ).format(t=sql.Identifier(f"rag_{collection}"))).fetchone()
    assert row is not None
    return int(row["n"])


def upload_and_index(world: World, kb) -> str:
    try:
        accepted = accept_direct_upload(world.intake(), world.writer_of(kb), str(kb.id), "race.txt",
                                        text("race", 2), DocumentFields())
    except (CollectionNotFoundError, ConflictError):
        return "refused"
    doc = accepted.document
    assert doc.storage_path
    world.pipeline(doc.id, doc.storage_path)
    with transaction() as conn:
        row = conn.execute("SELECT status FROM documents WHERE id = %s", (doc.id,)).fetchone()
    return "row gone" if row is None else str(row["status"])


@pytest.mark.parametrize("first", ["upload", "delete"])
def test_an_upload_racing_a_base_delete_leaves_no_chunk_without_a_base_and_no_object_without_a_row(
        world: World, monkeypatch: pytest.MonkeyPatch, first: str):
    monkeypatch.setattr(parse_stage, "extract_isolated", extract)
    rng = random.Random(f"teardown-race-{first}")
    sibling_name = f"race_{first}_shared"
    sibling = world.base(sibling_name, org="globex")
    warm = time.monotonic()
    world.ingest(sibling, "sibling.txt", text("sibling", 2))
    pipeline_seconds = time.monotonic() - warm  # how long an upload takes to index here, now
    sibling_chunks = world.chunks(sibling_name, sibling.id)
    seen: Counter[str] = Counter()

    for i in range(ROUNDS):
        name = sibling_name if i % 2 else f"race_{first}_{i}"
        kb = world.base(name, org="acme")
        barrier = threading.Barrier(2)
        results: dict[str, object] = {}
        failures: list[BaseException] = []

        def upload_side() -> None:
            try:
                barrier.wait()
                if first == "delete":
                    time.sleep(rng.uniform(0, 0.03))
                results["upload"] = upload_and_index(world, kb)  # noqa: B023 - joined below
            except BaseException as exc:
                failures.append(exc)

        def delete_side() -> None:
            try:
                barrier.wait()
                if first == "upload":
                    time.sleep(rng.uniform(0, 1.3 * pipeline_seconds))  # anywhere in the upload's indexing
                with transaction() as conn:
                    td = request_base_teardown(conn, world.writer_of(kb), str(kb.id), get_settings())  # noqa: B023
                results["teardown"] = run_all(world.teardowns, td.id)
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=upload_side), threading.Thread(target=delete_side)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not failures, failures
        done = results["teardown"]
        assert getattr(done, "state", None) == "done", done
        # the document was indexed before the delete took it, or the delete came first
        seen["indexed, then torn down" if getattr(done, "chunks_removed", 0) else str(results["upload"])] += 1

        assert homeless_chunks(name) == 0, f"round {i}: a chunk outlived its base or its row"
        assert orphans(world) == [], f"round {i}: an object outlived its row"
        with transaction() as conn:
            assert conn.execute("SELECT count(*) AS n FROM documents WHERE kb_id = %s", (kb.id,)).fetchone()["n"] == 0

    # the sibling's own document was never touched
    assert world.chunks(sibling_name, sibling.id) == sibling_chunks
    assert len(world.document_ids(sibling)) == 1
    # the rounds did race: both outcomes happened
    if first == "upload":
        assert seen["indexed, then torn down"] >= 1 and sum(seen.values()) - seen["indexed, then torn down"] >= 1, seen
    else:
        assert seen["refused"] >= 1, seen


def test_a_chunk_write_second_finds_the_base_gone_and_writes_nothing(world: World, monkeypatch):
    """The write that comes second after a delete: its base-row lock finds no row; nothing is written."""
    monkeypatch.setattr(parse_stage, "extract_isolated", extract)
    kb = world.base("second_writer", org="acme")
    entered, release = threading.Event(), threading.Event()

    def hold(calls: int) -> None:  # the embedding batch is where the write waits for the delete
        entered.set()
        release.wait(30)

    world.embedder.before_batch = hold
    accepted = accept_direct_upload(world.intake(), world.writer_of(kb), str(kb.id), "late.txt", text("late", 2),
                                    DocumentFields())
    doc_id = accepted.document.id
    assert accepted.document.storage_path
    ingest = threading.Thread(target=world.pipeline, args=(doc_id, accepted.document.storage_path))
    ingest.start()
    assert entered.wait(30)
    with transaction() as conn:
        td = request_base_teardown(conn, world.writer_of(kb), str(kb.id), get_settings())
    done = run_all(world.teardowns, td.id)
    release.set()
    ingest.join(30)
    assert done.state == "done" and done.documents_removed == 1
    with transaction() as conn:
        assert not store.table_exists(conn, "second_writer")
        assert conn.execute("SELECT 1 FROM documents WHERE id = %s", (doc_id,)).fetchone() is None
    assert orphans(world) == []


def test_a_stage_that_wrote_after_the_teardown_removed_its_objects_leaves_nothing(world: World, monkeypatch):
    """Parse claims the row, the teardown runs whole while it reads, then parse writes the text and its
    artifact: the next stage finds the row gone and removes both (an artifact would otherwise wait
    a week for the lifecycle rule)."""
    entered, release = threading.Event(), threading.Event()

    def slow_extract(data, kind, budget):
        entered.set()
        release.wait(30)
        return extract(data, kind, budget)

    monkeypatch.setattr(parse_stage, "extract_isolated", slow_extract)
    kb = world.base("slow_parse", org="acme")
    accepted = accept_direct_upload(world.intake(), world.writer_of(kb), str(kb.id), "slow.txt", text("slow", 2),
                                    DocumentFields())
    assert accepted.document.storage_path
    ingest = threading.Thread(target=world.pipeline, args=(accepted.document.id, accepted.document.storage_path))
    ingest.start()
    assert entered.wait(30)
    with transaction() as conn:
        td = request_base_teardown(conn, world.writer_of(kb), str(kb.id), get_settings())
    assert run_all(world.teardowns, td.id).state == "done"
    assert world.objects() == {}
    release.set()
    ingest.join(30)
    assert orphans(world) == [] and world.objects() == {}


def test_an_archive_unpacked_after_its_base_was_cleared_files_no_member(world: World):
    """The unpack stage that comes second: its archive row is gone (a default base cleared under it),
    so it files no member row and writes no member object."""
    kb = world.base("cleared_archive", org="acme", is_default=True)
    archive = zip_bytes([("docs/a.txt", text("member a", 2)), ("docs/b.txt", text("member b", 2))])
    accepted = accept_direct_upload(world.intake(), world.writer_of(kb), str(kb.id), "bundle.zip", archive,
                                    DocumentFields())
    with transaction() as conn:
        td = request_base_teardown(conn, world.writer_of(kb), str(kb.id), get_settings())
    assert run_all(world.teardowns, td.id).state == "done"
    with transaction() as conn:
        assert kb_repo.get(conn, kb.id) is not None  # cleared, not deleted

    with pytest.raises(StaleEvent):
        unpack_archive(world.stages, accepted.document, 1, archive, sniff(archive, "bundle.zip"))

    with transaction() as conn:
        assert doc_repo.count_for_kb(conn, kb.id) == 0
    assert not [k for k in world.objects() if k.startswith("rag/cleared_archive/")]
