"""A train run logs the alignment measures and erasure tests: metrics, the offset table, the
offset chart, and the CLI summary's lines about them (the lines themselves: tests/components/test_summaries.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _flowkit import client_for

from attnlab.lab.summaries import format_summary

pytestmark = pytest.mark.slow

ATTENTION = (
    "alignment_within_one", "alignment_offset_mode", "alignment_shifted_accuracy", "alignment_error_rate",
    "erasure_examples", "erasure_flip_top", "erasure_flip_random", "erasure_flip_gold",
    "erasure_drop_top", "erasure_drop_random", "erasure_drop_gold",
)  # fmt: skip


def test_a_run_logs_the_measures_the_offset_table_and_chart(learned_store):
    store, summary = learned_store
    client, run_id = client_for(store), summary["run_id"]
    metrics = client.get_run(run_id).data.metrics
    for name in ATTENTION:
        assert metrics[f"test_{name}"] == pytest.approx(summary["metrics"][f"test_{name}"]), name
    assert metrics["test_erasure_examples"] == 100  # the whole test split (fewer than the sample size)
    table = json.loads(Path(client.download_artifacts(run_id, "tables/alignment_offsets.json")).read_text())
    assert table["columns"] == ["offset", "steps", "share"]
    shares = {row[0]: row[2] for row in table["data"]}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert metrics["test_alignment_offset_mode"] == max(shares, key=shares.get)
    png = Path(client.download_artifacts(run_id, "plots/alignment_offsets.png"))
    assert png.read_bytes().startswith(b"\x89PNG")
    text = format_summary({**summary, "ui": "http://ui"})
    assert f"within one {metrics['test_alignment_within_one']:.4f}" in text
    assert f"erasure (100 test examples): flip rate top {metrics['test_erasure_flip_top']:.4f}" in text
