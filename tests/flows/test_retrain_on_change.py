"""Scheduled retraining on a user's file: a tick on the champion's own data ends at once with
"data unchanged" recorded on its run; once the file grows, the next tick trains on the new data
and the one promotion rule decides on the registered model's fixed benchmark. The ticks are runs
of the retrain flow against a real (temporary) Prefect server and a real file."""

from __future__ import annotations

import hashlib

import pytest
from _flowkit import client_for, point_at, spelled_words

from attnlab.flows.retrain_flow import SKIPPED_TAG, retrain_flow
from attnlab.lab.config import ExperimentConfig


@pytest.fixture(scope="module")
def ticks(tmp_path_factory, prefect_harness):
    """(store, the file, the three ticks' summaries: first, unchanged, after the file grew)."""
    root = tmp_path_factory.mktemp("retrain-on-change")
    path = root / "words.csv"
    path.write_text(spelled_words(300))
    options = {"path": str(path), "source_column": "word", "target_column": "spelled", "target_tokenization": "whitespace"}
    config = ExperimentConfig(task="pairs", task_options=options, train_size=200, validation_size=40, test_size=60,
                              epochs=1, hidden_size=16, embedding_dim=8)  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        store = point_at(root / "mlflow", patch)
        first = retrain_flow(config, benchmark_size=60)
        unchanged = retrain_flow(config)
        path.write_text(spelled_words(500))
        grown = retrain_flow(config)
    return store, path, (first, unchanged, grown)


@pytest.mark.slow
def test_an_unchanged_file_ends_the_tick_without_training(ticks):
    store, _, (first, unchanged, _) = ticks
    assert first["decision"]["promoted"] and "skipped" not in first
    assert unchanged["skipped"].startswith("data unchanged: the champion (version 1) was trained on this data")
    client = client_for(store)
    run = client.get_run(unchanged["run_id"])
    assert run.info.status == "FINISHED" and run.data.tags[SKIPPED_TAG] == unchanged["skipped"]
    children = client.search_runs([run.info.experiment_id], f"tags.mlflow.parentRunId = '{unchanged['run_id']}'")
    assert not children  # nothing trained


@pytest.mark.slow
def test_a_grown_file_is_trained_on_and_judged_on_the_fixed_benchmark(ticks):
    store, path, (first, _, grown) = ticks
    assert "skipped" not in grown
    client = client_for(store)
    versions = {str(v.version): v for v in client.search_model_versions("name='attnlab-pairs'")}
    assert sorted(versions) == ["1", "2"]
    assert versions["2"].tags["promotion.command"] == "retrain" and "promotion.reason" in versions["2"].tags
    assert grown["benchmark"]["run_id"] == first["benchmark"]["run_id"]  # the benchmark stays fixed
    trained_on = client.get_run(grown["challenger"]["run_id"]).data.tags["attnlab.data_version"]
    assert trained_on == hashlib.sha256(path.read_bytes()).hexdigest()
