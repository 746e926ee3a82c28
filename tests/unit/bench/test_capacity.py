"""capacity.py (issue 30): the search rows read from the last search_latency.py run (the service's query
picked out of the other systems that run measured, idle and with writes, with the run's date), and the
teardown probe's listings and DeleteObjects calls against moto."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


def _capacity(monkeypatch, out: Path):
    monkeypatch.syspath_prepend(str(BENCH))  # the bench scripts import their harness as a sibling
    sys.modules.pop("capacity", None)
    capacity = importlib.import_module("capacity")
    monkeypatch.setattr(capacity, "OUT", out)
    return capacity


def _result(system: str, flt: str, ms: list[float]) -> dict:
    return {"system": system, "filter": flt, "ms": ms, "recall": 1.0}


def test_the_rows_are_the_service_query_idle_and_with_writes_with_the_run_date(tmp_path, monkeypatch):
    capacity = _capacity(monkeypatch, tmp_path)
    (tmp_path / "search_latency.json").write_text(json.dumps({
        "measured": "2026-12-02 16:40 UTC", "load_average": [4.0, 5.0, 6.0], "rows": 100_000, "queries": 3,
        "costs": {"writer rows/s": 250.0},
        "results": [
            # other systems of the same run, which must not be picked
            _result("PGVector as shipped (no idx)", "none (100%)", [900.0, 900.0, 900.0]),
            _result("pgvector HNSW naive (ef 40)", "none (100%)", [1.0, 1.0, 1.0]),
            _result("Sluice, 0.6 plan (halfvec)", "none (100%)", [2.0, 2.0, 2.0]),
            _result("Sluice (halfvec)", "none (100%)", [10.0, 20.0, 30.0]),
            _result("Sluice (halfvec)", "5%", [7.0, 7.0, 7.0]),
            _result("Sluice (halfvec) + text", "none (100%)", [40.0, 50.0, 60.0]),
            _result("Sluice (halfvec) + text", "5%", [9.0, 9.0, 9.0]),
            _result("Sluice (halfvec) + writes", "none (100%)", [100.0, 200.0, 300.0]),
            _result("Sluice (halfvec) + text + writes", "none (100%)", [400.0, 500.0, 600.0]),
        ],
    }))

    rows = {row[0]: row for row in capacity.search_rows()}

    idle_text = rows["search per query, 100k chunks, idle, vector + text (as the service)"]
    assert idle_text[1:5] == ["50.0 ms", "60.0 ms", "60.0 ms", "3 queries"]
    assert "2026-12-02 16:40 UTC" in idle_text[5] and "load 4.0/5.0/6.0" in idle_text[5]
    assert "9-9 ms" in idle_text[5]  # the other selectivities of the same system
    assert rows["search per query, 100k chunks, idle, vector side only"][1] == "20.0 ms"
    written = rows["search per query, 100k chunks, while a writer COPYs 1,000 chunks a transaction, "
                   "vector + text (as the service)"]
    assert written[1] == "500.0 ms" and "writer 250 rows/s" in written[5]
    assert rows["search per query, 100k chunks, while a writer COPYs 1,000 chunks a transaction, "
                "vector side only"][1] == "200.0 ms"
    assert rows["search per query, 1M chunks, idle"][4] == "taken from"


def test_without_a_run_the_row_says_how_to_take_it(tmp_path, monkeypatch):
    capacity = _capacity(monkeypatch, tmp_path)

    rows = capacity.search_rows()

    assert rows[0][4] == "not run" and "--with-writes" in rows[0][5]


def test_the_teardown_probe_lists_each_place_and_deletes_in_the_steps_batches(tmp_path, monkeypatch):
    """12 documents of 4 objects: 48 listings (one a place), and the step's batches of 200 documents
    make one DeleteObjects call of 48 keys; every object is gone (the probe checks that itself)."""
    pytest.importorskip("moto")
    capacity = _capacity(monkeypatch, tmp_path)
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_ACCESS_KEY_ID", "testing"),
                        ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)  # restored after the test (the probe only sets them when unset)

    out = capacity.teardown_object_times(48, repeats=2)

    assert out["listings"] == [48.0, 48.0]
    assert out["calls"] == [1.0, 1.0]
    assert len(out["list"]) == len(out["delete"]) == 2
    assert all(s > 0 for s in out["list"] + out["delete"])
