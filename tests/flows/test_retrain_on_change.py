"""Scheduled retraining on a user's file: a tick on data already trained on ends at once with the
reason recorded on its run; once the file grows, the next tick trains on the new data and the one
promotion rule decides on the registered model's fixed benchmark, whose sources never train; a
tick whose test split cannot hold the benchmark is refused in one line. The ticks are runs of the
retrain flow against a real (temporary) Prefect server and a real file (the served schedule:
test_schedule.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
from _flowkit import client_for, point_at, spelled_words

from attnlab.flows.retrain_flow import retrain_flow
from attnlab.flows.tracking.retrain_runs import DESCRIPTION_TAG
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.run_records import RETRAIN_SKIPPED_TAG

NAME = "attnlab-pairs-words"


@pytest.fixture(scope="module")
def ticks(tmp_path_factory, prefect_harness):
    """(store, the file, the ticks' results: first, unchanged, after the file grew (a challenger
    that loses: the margin), unchanged since that loss, with a test split too small for the
    benchmark)."""
    root = tmp_path_factory.mktemp("retrain-on-change")
    path = root / "words.csv"
    path.write_text(spelled_words(300))
    options = {"path": str(path), "source_column": "word", "target_column": "spelled", "target_tokenization": "whitespace"}
    config = ExperimentConfig(task="pairs", task_options=options, train_size=200, validation_size=40, test_size=60,
                              epochs=1, hidden_size=16, embedding_dim=8, explain_examples=0)  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        store = point_at(root / "mlflow", patch)
        first = retrain_flow(config, benchmark_size=60)
        unchanged = retrain_flow(config)
        path.write_text(spelled_words(500))
        grown = retrain_flow(config, margin=0.99)
        after_loss = retrain_flow(config)
        small = retrain_flow(config.model_copy(update={"test_size": 20}), retrain_always=True, return_state=True)
    return store, path, (first, unchanged, grown, after_loss, small)


def logged_splits(client, run_id: str) -> pd.DataFrame:
    """The splits a challenger trained on (logged once on its retrain run, named by its tag)."""
    import mlflow.artifacts

    where = client.get_run(run_id).data.tags["attnlab.splits"]
    return pd.read_csv(mlflow.artifacts.download_artifacts(artifact_uri=where), keep_default_na=False)


@pytest.mark.slow
def test_an_unchanged_file_ends_the_tick_without_training(ticks):
    store, _, (first, unchanged, *_) = ticks
    assert first["decision"]["promoted"] and "skipped" not in first
    assert unchanged["skipped"].startswith("data unchanged: the champion (version 1) was trained on this data")
    client = client_for(store)
    run = client.get_run(unchanged["run_id"])
    assert run.info.status == "FINISHED" and run.data.tags[RETRAIN_SKIPPED_TAG] == unchanged["skipped"]
    assert run.data.tags[DESCRIPTION_TAG] == f"skipped: {unchanged['skipped']}"  # what the MLflow UI shows on top
    children = client.search_runs([run.info.experiment_id], f"tags.mlflow.parentRunId = '{unchanged['run_id']}'")
    assert not children  # nothing trained


@pytest.mark.slow
def test_a_grown_file_is_trained_on_and_judged_on_the_fixed_benchmark_which_never_trains(ticks):
    store, path, (first, _, grown, *_) = ticks
    assert "skipped" not in grown
    client = client_for(store)
    assert client.get_experiment_by_name(NAME) is not None  # the file's own experiment and model
    versions = {str(v.version): v for v in client.search_model_versions(f"name='{NAME}'")}
    assert sorted(versions) == ["1", "2"]
    assert versions["2"].tags["promotion.command"] == "retrain" and "promotion.reason" in versions["2"].tags
    assert grown["decision"]["promoted"] is False  # the margin: no challenger wins
    assert grown["benchmark"]["run_id"] == first["benchmark"]["run_id"]  # the benchmark stays fixed
    trained_on = client.get_run(grown["challenger"]["run_id"]).data.tags["attnlab.data_version"]
    assert trained_on == hashlib.sha256(path.read_bytes()).hexdigest()
    benchmark = json.loads(Path(client.download_artifacts(first["benchmark"]["run_id"], "benchmark/benchmark.json")).read_text())
    sources = {row[0] for row in benchmark["examples"]}
    splits = logged_splits(client, grown["challenger"]["run_id"])
    assert not sources & set(splits[splits["split"] != "test"]["source"])  # the new words shift the hash order
    assert sources <= set(splits[splits["split"] == "test"]["source"]) and grown["benchmark_overlap"] == 0.0


@pytest.mark.slow
def test_a_tick_on_the_data_of_a_challenger_that_lost_does_not_train_it_again(ticks):
    store, _, (*_, grown, after_loss, _) = ticks
    lost = grown["run_id"]
    assert after_loss["skipped"].startswith(f"data unchanged: the last retrain (run {lost[:8]}, not promoted)")
    client = client_for(store)
    assert sorted(int(v.version) for v in client.search_model_versions(f"name='{NAME}'")) == [1, 2]  # nothing registered


@pytest.mark.slow
def test_a_test_split_too_small_for_the_benchmark_is_refused_in_one_line(ticks):
    store, _, (*_, small) = ticks
    assert small.is_failed()
    message = small.message
    assert "\n" not in message and message.startswith(f"retrain of {NAME} failed: ")
    assert "the registered model's benchmark has 60 sources of this data" in message and "-o test_size=60 or more" in message
    client = client_for(store)
    [failed] = client.search_runs([client.get_experiment_by_name(NAME).experiment_id], "attributes.status = 'FAILED'")
    assert "-o test_size=60 or more" in failed.data.tags["attnlab.error"]
    assert str(client.get_registered_model(NAME).aliases["champion"]) in {"1", "2"}  # unchanged by the failure
