"""R-TD-3 under concurrency: an upload (its row, its object, then every stage S3's events would run)
and a delete of its base (the request, then the teardown's steps), on two threads against the real
PostgreSQL and a moto S3. One side is held at each point of its way in turn while the other runs
whole, then let go: the delete lands between every two steps of the upload (and inside its parse
and its embedding), and the upload between every two steps of the delete. Each point twice: once
deleting the last holder of the name (the table is dropped), once a base beside a sibling (only its
chunks go).

Whatever the order, afterwards there is never a chunk without its base (or without its document's
row), and never an object without its row; and each order ends as it must (refused, the row gone,
or indexed and then torn down).

The parse stage reads in this process here rather than in its isolated child: the same reader,
without the half second a fresh interpreter costs. What races is the rows, the locks, the objects
and the chunk write, all real.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest
from psycopg import sql

from sluice.config import get_settings
from sluice.db import documents as doc_repo
from sluice.db import knowledge_bases as kb_repo
from sluice.db.connection import Connection, transaction
from sluice.db.teardowns import Teardown
from sluice.errors import CollectionNotFoundError, ConflictError
from sluice.ingest import parse as parse_stage
from sluice.ingest.archive import unpack_archive
from sluice.ingest.runner import StaleEvent
from sluice.ingest.uploads import FileBytes, IntoBase, accept
from sluice.parsing import extract, sniff
from sluice.teardown import request_base_teardown, run_all
from sluice.vectors import store
from tests.integration.teardown.conftest import World, text
from tests.unit.parsing.parsing_samples import zip_bytes

OBJECT_OF_ROW = ("text/", "stage/parsed/", "stage/chunks/", "incoming/")
# Where the delete lands in the upload, and what the upload comes to then.
UPLOAD_POINTS = {
    "access checked": "refused",  # the base is gone before the row is filed
    "row filed": "row gone",  # before its object is stored
    "stored": "row gone",
    "parsing": "row gone",
    "after parse": "row gone",
    "after chunk": "row gone",
    "embedding": "row gone",
    "after embed": "indexed, then torn down",
}
# Where the upload lands in the delete: once the request has committed, the base takes nothing more.
DELETE_POINTS = {f"after {step}": "refused" for step in ("request", "chunks", "sources", "objects", "done")}


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


class Hold:
    """Holds the side it is handed to at one named point until let go; every other point passes."""

    def __init__(self, point: str) -> None:
        self.point = point
        self.reached, self.go = threading.Event(), threading.Event()

    def __call__(self, point: str) -> None:
        if point == self.point and not self.reached.is_set():
            self.reached.set()
            assert self.go.wait(60), f"held at {point} and never let go"


def upload_and_index(world: World, kb, at: Callable[[str], None]) -> str:
    filed = iter(("access checked", "row filed"))

    @contextmanager
    def uow() -> Iterator[Connection]:  # the upload's two transactions, each named once it commits
        with transaction() as conn:
            yield conn
        at(next(filed, "after"))

    try:
        accepted = accept(replace(world.intake(), uow=uow), world.writer_of(kb), IntoBase(str(kb.id)),
                          FileBytes("race.txt", text("race", 2)))
    except (CollectionNotFoundError, ConflictError):
        return "refused"
    doc = accepted.document
    assert doc.storage_path
    at("stored")
    world.pipeline(doc.id, doc.storage_path, between=lambda stage: at(f"after {stage}"))
    with transaction() as conn:
        row = conn.execute("SELECT status FROM documents WHERE id = %s", (doc.id,)).fetchone()
    return "row gone" if row is None else str(row["status"])


def tear_down(world: World, kb, at: Callable[[str], None]) -> Teardown:
    with transaction() as conn:
        td = request_base_teardown(conn, world.writer_of(kb), str(kb.id), get_settings())
    at("after request")
    return run_all(world.teardowns, td.id, progress=lambda current: at(f"after {current.step}"))


@pytest.mark.parametrize("held", ["upload", "delete"])
def test_an_upload_racing_a_base_delete_leaves_no_chunk_without_a_base_and_no_object_without_a_row(
        world: World, monkeypatch: pytest.MonkeyPatch, held: str):
    at: list[Callable[[str], None]] = [lambda point: None]  # the held side's hook, this round's

    def held_extract(data, kind, budget, **_):  # the parse's deadline (until) is not this test's
        at[0]("parsing")
        return extract(data, kind, budget)

    monkeypatch.setattr(parse_stage, "extract_isolated", held_extract)
    world.embedder.before_batch = lambda calls: at[0]("embedding")
    sibling_name = f"race_{held}_shared"
    sibling = world.base(sibling_name, org="globex")
    world.ingest(sibling, "sibling.txt", text("sibling", 2))
    sibling_chunks = world.chunks(sibling_name, sibling.id)
    assert sibling_chunks > 0
    points = UPLOAD_POINTS if held == "upload" else DELETE_POINTS
    rounds = [(point, beside) for point in points for beside in (False, True)]

    for i, (point, beside) in enumerate(rounds):
        name = sibling_name if beside else f"race_{held}_{i}"
        kb = world.base(name, org="acme")
        hold = Hold(point)
        results: dict[str, object] = {}
        failures: list[BaseException] = []

        def upload_side(hook: Callable[[str], None]) -> None:
            try:
                results["upload"] = upload_and_index(world, kb, hook)  # noqa: B023 - run within the round
            except BaseException as exc:
                failures.append(exc)

        def delete_side(hook: Callable[[str], None]) -> None:
            try:
                results["teardown"] = tear_down(world, kb, hook)  # noqa: B023 - run within the round
            except BaseException as exc:
                failures.append(exc)

        first, second = (upload_side, delete_side) if held == "upload" else (delete_side, upload_side)
        at[0] = hold if held == "upload" else (lambda point: None)
        holding = threading.Thread(target=first, args=(hold,))
        holding.start()
        assert hold.reached.wait(60), f"round {i}: the {held} never reached {point}: {failures}"
        at[0] = lambda point: None  # the other side runs whole
        second(lambda point: None)
        hold.go.set()
        holding.join(60)
        assert not holding.is_alive() and not failures, failures

        done = results["teardown"]
        assert isinstance(done, Teardown) and done.state == "done", done
        outcome = "indexed, then torn down" if done.chunks_removed else str(results["upload"])
        where = f"round {i}: the {held} held at {point}, {'beside a sibling' if beside else 'the last holder'}"
        assert outcome == points[point], where
        assert homeless_chunks(name) == 0, f"{where}: a chunk outlived its base or its row"
        assert orphans(world) == [], f"{where}: an object outlived its row"
        with transaction() as conn:
            assert conn.execute("SELECT count(*) AS n FROM documents WHERE kb_id = %s", (kb.id,)).fetchone()["n"] == 0
            assert store.table_exists(conn, name) == beside, where  # dropped with its last holder only

    assert len(rounds) == 2 * len(points)
    # the sibling's own document was never touched
    assert world.chunks(sibling_name, sibling.id) == sibling_chunks
    assert len(world.document_ids(sibling)) == 1


def test_a_chunk_write_second_finds_the_base_gone_and_writes_nothing(world: World, monkeypatch):
    """The write that comes second after a delete: its base-row lock finds no row; nothing is written."""
    monkeypatch.setattr(parse_stage, "extract_isolated", lambda data, kind, budget, **_: extract(data, kind, budget))
    kb = world.base("second_writer", org="acme")
    entered, release = threading.Event(), threading.Event()

    def hold(calls: int) -> None:  # the embedding batch is where the write waits for the delete
        entered.set()
        release.wait(30)

    world.embedder.before_batch = hold
    accepted = accept(world.intake(), world.writer_of(kb), IntoBase(str(kb.id)), FileBytes("late.txt", text("late", 2)))
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

    def slow_extract(data, kind, budget, **_):
        entered.set()
        release.wait(30)
        return extract(data, kind, budget)

    monkeypatch.setattr(parse_stage, "extract_isolated", slow_extract)
    kb = world.base("slow_parse", org="acme")
    accepted = accept(world.intake(), world.writer_of(kb), IntoBase(str(kb.id)), FileBytes("slow.txt", text("slow", 2)))
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
    accepted = accept(world.intake(), world.writer_of(kb), IntoBase(str(kb.id)), FileBytes("bundle.zip", archive))
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
