"""How a listing is cut into the Map's batches: by count and bytes, and never into more batches
than an execution's state and history hold (they grow instead)."""

from __future__ import annotations

from sluice.config import Settings
from sluice.sync.connectors import RemoteFile
from sluice.sync.context import SyncContext
from sluice.sync.tasks import MAX_BATCHES, _rows


def ctx(**settings: int) -> SyncContext:
    return SyncContext(uow=None, store=None, settings=Settings().model_copy(update=settings),  # type: ignore[arg-type]
                       connectors=None)  # type: ignore[arg-type]


def files(n: int, size: int = 10) -> list[RemoteFile]:
    return [RemoteFile(f"k{i}.md", f"s3://b/k{i}.md", size, f"e{i}") for i in range(n)]


def test_batches_are_bounded_by_count_and_bytes():
    rows = _rows(ctx(sync_batch_files=3, sync_batch_mb=1), files(7))
    assert [r.batch for r in rows] == [0, 0, 0, 1, 1, 1, 2]
    big = _rows(ctx(sync_batch_files=10, sync_batch_mb=1), files(4, size=600_000))
    assert [r.batch for r in big] == [0, 1, 2, 3]  # one 600 KB file per 1 MB batch


def test_a_huge_listing_makes_bigger_batches_not_more_of_them():
    rows = _rows(ctx(sync_batch_files=2, sync_batch_mb=1), files(MAX_BATCHES * 5 + 1, size=900_000))
    # 5,001 files in at most 1,000 batches: 6 a batch (the byte bound gives way), 834 batches
    assert len({r.batch for r in rows}) == 834 <= MAX_BATCHES
    assert sum(1 for r in rows if r.batch == 0) == 6


def test_a_refused_name_is_decided_at_listing_and_takes_no_place_in_a_batch():
    rows = _rows(ctx(sync_batch_files=1), [RemoteFile("..", "s3://b/..", 3, "e"), *files(2)])
    assert (rows[0].outcome, rows[0].name) == ("failed", "..")
    assert [(r.outcome, r.batch) for r in rows[1:]] == [(None, 0), (None, 1)]
