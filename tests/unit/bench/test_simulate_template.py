"""bench/simulate.py takes its settings from template.yaml, not from constants of its own (issue 30)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("simpy", reason="simpy is a dev dependency (pyproject.toml)")

from bench.simulate import Options, ServiceTimes, read_settings, run, summarise  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


def _copy_with_chunk_batch(tmp_path: Path, batch: int) -> Path:
    text = (ROOT / "template.yaml").read_text()
    marker = "Queue: !GetAtt ChunkQueue.Arn\n            BatchSize: 5\n"
    assert marker in text, "the chunk stage's event source moved: update this test's marker"
    folder = tmp_path / f"b{batch}"
    folder.mkdir()
    (folder / "template.yaml").write_text(text.replace(marker, marker.replace("BatchSize: 5", f"BatchSize: {batch}")))
    shutil.copytree(ROOT / "infra" / "statemachines", folder / "infra" / "statemachines")
    return folder / "template.yaml"


def test_the_settings_are_the_templates():
    settings = read_settings(ROOT / "template.yaml")
    assert settings.stages["chunk"].batch_size == 5
    assert settings.stages["embed"].visibility_timeout == 5400
    assert settings.stages["parse"].max_receive_count == 3
    assert settings.stages["embed"].memory_mb == 3008
    assert settings.sync_map_concurrency == 4


def test_a_changed_batch_size_in_a_copy_of_the_template_changes_simulated_throughput(tmp_path):
    """Three concurrent executions for the whole account and a second of fixed cost per invocation:
    the chunk stage's batch of 5 takes 200 documents in 40 invocations, a batch of 1 in 200, so the
    same 200 documents drain measurably slower."""
    service = ServiceTimes(
        parse_s_per_doc=0.01,
        chunk_s_per_doc=0.01,
        embed_s_per_chunk=0.01,
        store_s_per_doc=0.01,
        invocation_overhead_s=1.0,
    )
    options = Options(account_concurrency=3)
    results = {}
    for batch in (5, 1):
        settings = read_settings(_copy_with_chunk_batch(tmp_path, batch))
        assert settings.stages["chunk"].batch_size == batch
        results[batch] = summarise(run(settings, service, options, fixed_docs=[2] * 200, horizon=1.0))
    assert results[5]["done"] == results[1]["done"] == 200
    # Slot-seconds with full batches: parse 200 x 1.01, embed 200 x ~1.04, chunk 40 x 1.05 against 200 x 1.01,
    # 0.8x the work; a poller takes what is visible, so batches are not always full: at least 8 % faster.
    assert results[5]["throughput_docs_per_min"] > 1.08 * results[1]["throughput_docs_per_min"]
