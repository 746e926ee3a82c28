"""simulate.py --validate-load: a measured local run against the same arrivals simulated with that run's
own pump times (issue 30). A run the local shape describes exactly must come back exactly."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("simpy", reason="simpy is a dev dependency (pyproject.toml)")

from bench.simulate import spread, validate_load  # noqa: E402

T0 = 1_000_000.0  # the wall clock of the record's first upload


def test_spread_keeps_the_total_and_differs_by_at_most_one():
    assert spread(10, 3) == [4, 3, 3]
    assert spread(6, 3) == [2, 2, 2]
    assert spread(2, 4) == [1, 1, 0, 0]


def _record(tmp_path, *, parse_s: float):
    """Four uploads a second apart; each document: parse ``parse_s``, chunk 0.5 s, embed 1 s (half of it
    the model's call for its one chunk), one pump per queue, each starting a batch as soon as its
    document is there and the pump is free: the timeline the local shape describes."""
    lines, parse_free, chunk_free, embed_free = [], 0.0, 0.0, 0.0
    for i in range(4):
        p = max(float(i), parse_free)
        parse_free = p + parse_s
        c = max(parse_free, chunk_free)
        chunk_free = c + 0.5
        e = max(chunk_free, embed_free)
        embed_free = e + 1.0
        lines += [
            {"queue": "IngestQueue", "start": T0 + p, "seconds": parse_s, "messages": 1},
            {"queue": "ChunkQueue", "start": T0 + c, "seconds": 0.5, "messages": 1},
            {"queue": "EmbedQueue", "start": T0 + e, "seconds": 1.0, "messages": 1},
            {"part": "embed", "start": T0 + e, "seconds": 0.5},
        ]
    # A batch of a queue the pipeline does not model, and one from before the first upload (the seed).
    lines += [{"queue": "TeardownQueue", "start": T0 + 1, "seconds": 9.0, "messages": 1},
              {"queue": "IngestQueue", "start": T0 - 60, "seconds": 5.0, "messages": 1}]
    timings = tmp_path / "load_timings.jsonl"
    timings.write_text("".join(json.dumps(x) + "\n" for x in lines))
    record = tmp_path / "load.json"
    record.write_text(json.dumps({
        "timings": str(timings), "chunks": 4, "load_average_start": [1, 1, 1], "load_average_end": [1, 1, 1],
        "accepted": {f"d{i}": {"name": f"f{i}", "at": T0 + i, "status": "done", "chunks": 1} for i in range(4)},
    }))
    return record


@pytest.mark.parametrize(("parse_s", "drain"), [
    # parse bound: parse ends at 2, 4, 6, 8; the last chunk 8-8.5, its embed 8.5-9.5.
    (2.0, 9.5),
    # arrival bound: parse 0.2 s, each document through in 1.7 s; the last arrives at 3: done at 4.7.
    (0.2, 4.7),
])
def test_a_run_the_local_shape_describes_is_simulated_exactly(tmp_path, parse_s, drain):
    v = validate_load(_record(tmp_path, parse_s=parse_s))
    assert v["measured"]["drain_s"] == pytest.approx(drain)
    assert v["simulated"]["drain_s"] == pytest.approx(drain, abs=0.01)
    assert v["simulated"]["done"] == 4
    assert v["measured"]["throughput_docs_per_min"] == pytest.approx(60 * 4 / drain)
    assert v["stages"]["parse"]["batches"] == 4  # the seed's batch before the first upload is not counted
    assert v["service"].embed_s_per_chunk == pytest.approx(0.5)
    assert v["service"].store_s_per_doc == pytest.approx(0.5)


def test_gaps_are_split_into_waiting_for_work_and_the_pumps_own_receive(tmp_path):
    """Parse 2 s a document: chunk (0.5 s) waits 1.5 s for each next document, three times; the parse pump
    itself never waits (the four uploads are there by t = 3)."""
    v = validate_load(_record(tmp_path, parse_s=2.0))
    assert v["stages"]["chunk"]["gaps_waiting_s"] == pytest.approx(4.5)
    assert v["stages"]["chunk"]["gaps_with_work_s"] == pytest.approx(0.0)
    assert v["stages"]["parse"]["gaps_waiting_s"] + v["stages"]["parse"]["gaps_with_work_s"] == pytest.approx(0.0)
