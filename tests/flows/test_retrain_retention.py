"""Registry retention over several retrains against one store: versions beyond the newest
``keep`` are pruned, never the champion, the previous champion or an undecided version, and the
retrain run records what it pruned."""

from __future__ import annotations

import json

import pytest
from _flowkit import LEARNS, TINY, client_for, point_at

from attnlab.flows.retrain_flow import retrain_flow
from attnlab.flows.tracking.prune import PRUNED_ARTIFACT, PRUNED_METRIC, PRUNED_TAG
from attnlab.lab.config import ExperimentConfig

NAME = "attnlab-date"


@pytest.fixture(scope="module")
def ticks(tmp_path_factory, prefect_harness):
    """Five retrains with keep 2 and a version registered by hand (no decision: as if being
    promoted) after the second: v1 champion, v2 tie, v3 by hand, v4 beats v1, v5 and v6 lose.
    (store folder, [summaries])."""
    folder = tmp_path_factory.mktemp("retention") / "mlflow"
    tiny, learns = ExperimentConfig(**TINY), ExperimentConfig(**LEARNS)
    summaries = []
    with pytest.MonkeyPatch.context() as patch:
        point_at(folder, patch)
        for config in (tiny, tiny):
            summaries.append(retrain_flow(config, benchmark_size=60, keep=2))
        client = client_for(folder)
        first = client.get_model_version(NAME, "1")
        client.create_model_version(NAME, first.source, run_id=first.run_id, model_id=first.model_id)
        for config in (learns, tiny, tiny):
            summaries.append(retrain_flow(config, keep=2))
    return folder, summaries


def remaining(client) -> list[int]:
    return sorted(int(v.version) for v in client.search_model_versions(f"name='{NAME}'"))


@pytest.mark.slow
def test_versions_beyond_the_newest_keep_are_pruned_but_not_the_protected_ones(ticks):
    folder, summaries = ticks
    client = client_for(folder)
    assert [s["challenger"]["model"]["version"] for s in summaries] == ["1", "2", "4", "5", "6"]
    assert summaries[2]["decision"]["promoted"] and summaries[2]["decision"]["champion_version"] == "1"
    assert str(client.get_registered_model(NAME).aliases["champion"]) == "4"
    # v4 champion, v1 the champion before it, v3 undecided: kept though older than the newest two.
    assert remaining(client) == [1, 3, 4, 5, 6]
    assert [s["pruned"] for s in summaries] == [[], [], ["2"], [], []]


@pytest.mark.slow
def test_the_retrain_run_records_what_it_pruned(ticks, tmp_path):
    folder, summaries = ticks
    client = client_for(folder)
    pruning, quiet = client.get_run(summaries[2]["run_id"]).data, client.get_run(summaries[3]["run_id"]).data
    assert pruning.params["keep"] == "2" and pruning.tags[PRUNED_TAG] == "2" and pruning.metrics[PRUNED_METRIC] == 1.0
    assert quiet.tags[PRUNED_TAG] == "none" and quiet.metrics[PRUNED_METRIC] == 0.0
    listed = json.loads(open(client.download_artifacts(summaries[2]["run_id"], PRUNED_ARTIFACT, str(tmp_path)), encoding="utf-8").read())
    [entry] = listed["pruned"]
    trained = summaries[1]["challenger"]["run_id"]
    assert entry["version"] == "2" and entry["run_id"] == trained
    # The pruned version's run and files stay: its training run says so, and it registers again.
    assert client.get_run(trained).data.tags[PRUNED_TAG] == f"{NAME} version 2, by retrain run {summaries[2]['run_id']}"
    again = client.create_model_version(NAME, entry["source"], run_id=entry["run_id"], model_id=entry["model_id"])
    assert client.get_model_version(NAME, again.version).run_id == trained


def test_a_keep_below_two_fails_before_anything_runs(empty_store):
    state = retrain_flow(ExperimentConfig(**TINY), keep=1, return_state=True)
    assert state.is_failed() and "keep 1: give at least 2" in state.message
    assert not (empty_store / "mlflow.db").exists()
