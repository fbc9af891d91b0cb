"""Scheduled retraining: the benchmark set kept with the registered model, margin promotion of
a challenger over the champion, the decision records, failures that leave the champion alone,
registry retention (versions beyond the newest ``keep`` are pruned, never the champion, the
previous champion or an undecided version) and two promotions racing."""

from __future__ import annotations

import contextlib
import json
import threading
import time

import pytest
from _flowkit import LEARNS, TINY, client_for, point_at

from attnlab.flows.retrain_flow import retrain_flow
from attnlab.flows.tracking import benchmark_store
from attnlab.flows.tracking import promote as promotion
from attnlab.flows.tracking.promotion_lock import promotion_lock
from attnlab.flows.tracking.prune import PRUNED_ARTIFACT, PRUNED_METRIC, PRUNED_TAG
from attnlab.flows.tracking.registry import CHAMPION
from attnlab.lab.config import ExperimentConfig
from attnlab.ops.promotion import Decision
from mlflow import MlflowClient

NAME = "attnlab-date"
BENCHMARK = 120


def champion(client: MlflowClient, name: str = NAME) -> str | None:
    holder = client.get_registered_model(name).aliases.get(CHAMPION)
    return None if holder is None else str(holder)


def version_tags(client: MlflowClient, version: str) -> dict[str, str]:
    return client.get_model_version(NAME, version).tags


# --------------------------------------------------------------------------- the flow


@pytest.fixture(scope="module")
def retrains(tmp_path_factory, prefect_harness):
    """One store, retrains in a row with keep 2: a first (no champion: v1), an equal (v2), a
    version registered by hand with no decision (v3, as if being promoted), a better (v4, prunes
    v2), a worse challenger (v5), and one whose training loss became NaN (no version).
    (store folder, {label: summary or state})."""
    import attnlab.training.loop

    folder = tmp_path_factory.mktemp("retrain") / "mlflow"
    tiny, learns = ExperimentConfig(**TINY), ExperimentConfig(**LEARNS, explain_examples=0)
    runs: dict = {}
    with pytest.MonkeyPatch.context() as patch:
        point_at(folder, patch)
        runs["first"] = retrain_flow(tiny, benchmark_size=BENCHMARK, keep=2)
        runs["equal"] = retrain_flow(tiny, keep=2)  # a TINY model gets no date right: 0.0 == 0.0
        client = client_for(folder)
        first = client.get_model_version(NAME, "1")
        client.create_model_version(NAME, first.source, run_id=first.run_id, model_id=first.model_id)
        runs["better"] = retrain_flow(learns, keep=2)
        runs["worse"] = retrain_flow(tiny, keep=2)
        real_loss = attnlab.training.loop.sequence_loss
        patch.setattr(attnlab.training.loop, "sequence_loss", lambda *a: real_loss(*a) * float("nan"))
        runs["diverged"] = retrain_flow(tiny, return_state=True, keep=2)
    return folder, runs


@pytest.mark.slow
def test_first_retrain_fixes_the_benchmark_and_takes_the_alias(retrains, tmp_path):
    folder, runs = retrains
    client = client_for(folder)
    first = runs["first"]
    version = first["challenger"]["model"]["version"]
    assert first["decision"]["promoted"] is True and first["decision"]["champion_version"] is None
    tags = version_tags(client, version)
    assert tags["promotion.promoted"] == "true" and tags["promotion.reason"].startswith("first champion")
    assert tags["promotion.champion_score"] == "none" and tags["promotion.run_id"] == first["run_id"]
    # The benchmark: a run of its own, pointed at by the registered model, same for every retrain.
    model = client.get_registered_model(NAME)
    bench_run = model.tags[benchmark_store.BENCHMARK_RUN_TAG]
    assert {runs[k]["benchmark"]["run_id"] for k in ("first", "equal", "better", "worse")} == {bench_run}
    assert all(runs[k]["benchmark"]["size"] == BENCHMARK for k in ("first", "equal", "better", "worse"))
    path = client.download_artifacts(bench_run, benchmark_store.BENCHMARK_ARTIFACT, str(tmp_path))
    stored = json.loads(open(path, encoding="utf-8").read())
    assert len(stored["examples"]) == BENCHMARK and stored["task"] == "date"
    assert client.get_run(bench_run).data.tags["attnlab.kind"] == "benchmark"


@pytest.mark.slow
def test_each_retrain_trains_on_fresh_data_as_a_child_run(retrains):
    folder, runs = retrains
    client = client_for(folder)
    seeds = [runs[k]["seed"] for k in ("first", "equal", "better", "worse")]
    assert len(set(seeds)) == 4
    for label in ("first", "better"):
        summary = runs[label]
        retrain_run = client.get_run(summary["run_id"])
        assert retrain_run.info.status == "FINISHED"
        assert retrain_run.data.params["seed"] == str(summary["seed"])
        assert 0.0 <= retrain_run.data.metrics["benchmark_overlap"] <= 1.0
        child = client.get_run(summary["challenger"]["run_id"])
        assert child.data.tags["mlflow.parentRunId"] == summary["run_id"]
        assert child.data.params["seed"] == str(summary["seed"])


@pytest.mark.slow
def test_an_equal_challenger_does_not_take_the_alias(retrains):
    folder, runs = retrains
    client = client_for(folder)
    decision = runs["equal"]["decision"]
    assert decision["promoted"] is False
    assert decision["challenger_score"] == decision["champion_score"]
    assert decision["champion_version"] == runs["first"]["challenger"]["model"]["version"]
    run = client.get_run(runs["equal"]["run_id"]).data  # its version was pruned later (keep 2)
    assert run.tags["promotion.promoted"] == "false" and "does not beat" in run.tags["promotion.reason"]
    metrics = run.metrics
    assert metrics["promoted"] == 0.0 and metrics["margin"] == 0.0
    assert metrics["challenger_score"] == metrics["champion_score"]


@pytest.mark.slow
def test_a_better_challenger_takes_the_alias_and_a_worse_one_does_not(retrains):
    folder, runs = retrains
    client = client_for(folder)
    better, worse = runs["better"]["decision"], runs["worse"]["decision"]
    assert better["promoted"] is True and better["challenger_score"] > better["champion_score"]
    assert better["champion_version"] == runs["first"]["challenger"]["model"]["version"]
    assert worse["promoted"] is False and worse["champion_version"] == better["challenger_version"]
    assert worse["challenger_score"] < worse["champion_score"]
    assert champion(client) == better["challenger_version"]
    tags = version_tags(client, better["challenger_version"])
    assert tags["promotion.promoted"] == "true" and "beats champion" in tags["promotion.reason"]
    assert float(tags["promotion.challenger_score"]) == better["challenger_score"]
    assert float(tags["promotion.champion_score"]) == better["champion_score"]
    run = client.get_run(runs["better"]["run_id"]).data
    assert run.metrics["promoted"] == 1.0 and run.tags["promotion.promoted"] == "true"
    assert run.tags["promotion.challenger_version"] == better["challenger_version"]


@pytest.mark.slow
def test_a_failed_retrain_leaves_the_champion_and_ends_failed_with_the_reason(retrains):
    folder, runs = retrains
    client = client_for(folder)
    state = runs["diverged"]
    assert state.is_failed() and "TrainingDiverged" in state.message
    assert champion(client) == runs["better"]["decision"]["challenger_version"]
    experiment = client.get_experiment_by_name("attnlab-date")
    failed = client.search_runs([experiment.experiment_id], "tags.`attnlab.kind` = 'retrain' and attributes.status = 'FAILED'")
    assert len(failed) == 1 and "TrainingDiverged" in failed[0].data.tags["attnlab.error"]


def remaining(client) -> list[int]:
    return sorted(int(v.version) for v in client.search_model_versions(f"name='{NAME}'"))


@pytest.mark.slow
def test_versions_beyond_the_newest_keep_are_pruned_but_not_the_protected_ones(retrains):
    folder, runs = retrains
    client = client_for(folder)
    summaries = [runs[k] for k in ("first", "equal", "better", "worse")]
    assert [s["challenger"]["model"]["version"] for s in summaries] == ["1", "2", "4", "5"]
    # v4 champion, v1 the champion before it, v3 undecided: kept though older than the newest two.
    assert remaining(client) == [1, 3, 4, 5]
    assert [s["pruned"] for s in summaries] == [[], [], ["2"], []]


@pytest.mark.slow
def test_the_retrain_run_records_what_it_pruned(retrains, tmp_path):
    folder, runs = retrains
    client = client_for(folder)
    pruning, quiet = client.get_run(runs["better"]["run_id"]).data, client.get_run(runs["worse"]["run_id"]).data
    assert pruning.params["keep"] == "2" and pruning.tags[PRUNED_TAG] == "2" and pruning.metrics[PRUNED_METRIC] == 1.0
    assert quiet.tags[PRUNED_TAG] == "none" and quiet.metrics[PRUNED_METRIC] == 0.0
    listed = json.loads(open(client.download_artifacts(runs["better"]["run_id"], PRUNED_ARTIFACT, str(tmp_path)), encoding="utf-8").read())
    [entry] = listed["pruned"]
    trained = runs["equal"]["challenger"]["run_id"]
    assert entry["version"] == "2" and entry["run_id"] == trained
    # The pruned version's run and files stay: its training run says so, and it registers again.
    assert client.get_run(trained).data.tags[PRUNED_TAG] == f"{NAME} version 2, by retrain run {runs['better']['run_id']}"
    again = client.create_model_version(NAME, entry["source"], run_id=entry["run_id"], model_id=entry["model_id"])
    assert client.get_model_version(NAME, again.version).run_id == trained


@pytest.mark.slow
def test_a_challenger_that_fails_after_registration_is_not_promoted(retrains, monkeypatch):
    folder, runs = retrains
    point_at(folder, monkeypatch)
    client = client_for(folder)
    before = champion(client)
    real = promotion.load_version

    def champion_unreadable(client, name, version):
        if str(version) == before:
            raise RuntimeError("champion model cannot be loaded")
        return real(client, name, version)

    monkeypatch.setattr(promotion, "load_version", champion_unreadable)
    state = retrain_flow(ExperimentConfig(**TINY), return_state=True)
    assert state.is_failed() and "champion model cannot be loaded" in state.message
    assert champion(client) == before
    newest = max(int(v.version) for v in client.search_model_versions(f"name='{NAME}'"))
    tags = version_tags(client, str(newest))
    assert tags["promotion.promoted"] == "false"
    assert "failed before the decision" in tags["promotion.reason"] and "cannot be loaded" in tags["promotion.reason"]


def test_a_keep_below_two_fails_before_anything_runs(empty_store):
    state = retrain_flow(ExperimentConfig(**TINY), keep=1, return_state=True)
    assert state.is_failed() and "keep 1: give at least 2" in state.message
    assert not (empty_store / "mlflow.db").exists()


def test_bad_margin_fails_before_anything_runs(empty_store):
    state = retrain_flow(ExperimentConfig(**TINY), margin=1.5, return_state=True)
    assert state.is_failed() and "margin must be in [0, 1)" in state.message
    assert not (empty_store / "mlflow.db").exists()


def test_an_unreachable_tracking_server_fails_the_retrain_with_the_reason(monkeypatch):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{port}")
    state = retrain_flow(ExperimentConfig(**TINY), return_state=True)
    assert state.is_failed() and "cannot reach the MLflow tracking store" in state.message


# --------------------------------------------------------------------------- concurrency


def _race(client: MlflowClient, name: str, lock_for) -> tuple[str, dict[str, Decision]]:
    """Champion A (0.5); challengers B (0.9) and C (0.7) promote at once. Scoring the champion
    takes B 0.2 s and C 1.0 s, so without a lock both compare with A and C's alias lands last.
    (final alias holder, decisions by challenger)."""
    client.create_registered_model(name)
    versions = {label: client.create_model_version(name, source="file:///nowhere").version for label in "ABC"}
    label_of = {str(v): k for k, v in versions.items()}
    client.set_registered_model_alias(name, CHAMPION, versions["A"])
    scores, delays = {"A": 0.5, "B": 0.9, "C": 0.7}, {"B": 0.2, "C": 1.0}
    decisions: dict[str, Decision] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def score_for(me: str):
        def score(version: str) -> float:
            if label_of[str(version)] != me:
                time.sleep(delays[me])
            return scores[label_of[str(version)]]

        return score

    def contender(me: str) -> None:
        try:
            start.wait()
            decisions[me] = promotion.compare_and_set(client, name, versions[me], score_for(me), 0.0, lambda: lock_for(name))
        except BaseException as exc:  # noqa: BLE001  reported below
            errors.append(exc)

    threads = [threading.Thread(target=contender, args=(me,)) for me in "BC"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    return label_of[str(champion(client, name))], {k: d for k, d in decisions.items()}


def test_racing_promotions_without_the_lock_do_go_wrong(empty_store):
    """The race the lock prevents is real: the loser's alias lands last."""
    client = client_for(empty_store)
    holder, decisions = _race(client, "race-unlocked", lambda name: contextlib.nullcontext())
    assert holder == "C" and decisions["B"].promoted and decisions["C"].promoted


def test_racing_promotions_under_the_lock_leave_the_alias_on_the_winner(empty_store):
    client = client_for(empty_store)
    holder, decisions = _race(client, "race-locked", promotion_lock)
    assert holder == "B"
    assert decisions["B"].promoted
    if decisions["C"].promoted:  # C went first and beat A; B then beat C
        assert decisions["C"].champion_score == 0.5 and decisions["B"].champion_score == 0.7
    else:  # B went first; C compared with B
        assert decisions["C"].champion_score == 0.9 and decisions["B"].champion_score == 0.5
