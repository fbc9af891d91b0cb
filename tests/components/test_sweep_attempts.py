"""Settling a sweep's attempts: lost runs ended, reruns linked, nothing else touched."""

from __future__ import annotations

from attnlab.ops.cluster import prefect_problem, tracking_problem
from attnlab.ops.sweep_attempts import ATTEMPT, RERUN_OF, ChildRun, held_by_lost_worker, settle, stopped_sweep_line

DOT, ADDITIVE = ("date", "dot", 0), ("date", "additive", 0)


def test_a_lost_attempt_is_ended_and_its_rerun_linked_to_it():
    plan = settle([
        ChildRun("rerun", DOT, "FINISHED", 200),
        ChildRun("lost", DOT, "RUNNING", 100),
        ChildRun("other", ADDITIVE, "FINISHED", 150),
    ])  # fmt: skip
    assert plan.end == {"lost": "its worker was lost; rerun as rerun"}
    assert plan.tags == {"lost": {ATTEMPT: "1"}, "rerun": {ATTEMPT: "2", RERUN_OF: "lost"}}


def test_three_attempts_chain_in_start_order():
    plan = settle([ChildRun("c", DOT, "FINISHED", 3), ChildRun("a", DOT, "RUNNING", 1), ChildRun("b", DOT, "RUNNING", 2)])
    assert plan.tags["b"][RERUN_OF] == "a" and plan.tags["c"][RERUN_OF] == "b"
    assert plan.end == {"a": "its worker was lost; rerun as b", "b": "its worker was lost; rerun as c"}


def test_a_run_left_running_without_a_rerun_is_ended_too():
    plan = settle([ChildRun("alone", DOT, "RUNNING", 1), ChildRun("done", ADDITIVE, "FAILED", 2)])
    assert plan.end == {"alone": "still RUNNING when the sweep ended: its worker was lost"}
    assert plan.tags == {}


def test_a_clean_sweep_needs_nothing():
    plan = settle([ChildRun("a", DOT, "FINISHED", 1), ChildRun("b", ADDITIVE, "FAILED", 2)])
    assert plan.end == {} and plan.tags == {}


def test_a_cluster_needs_a_shared_tracking_store_and_prefect_server(tmp_path):
    assert "the embedded MLflow store" in tracking_problem(f"sqlite:///{tmp_path}/mlflow.db", tmp_path)
    assert "MLFLOW_TRACKING_URI=http://HOST:PORT" in tracking_problem("sqlite:////shared/mlflow.db", None)
    assert tracking_problem("http://10.0.0.5:5000", None) is None
    assert tracking_problem("postgresql+psycopg2://db/mlflow", None) is None
    assert "export PREFECT_API_URL" in prefect_problem(None)
    assert prefect_problem("http://10.0.0.5:4200/api") is None


def test_a_lost_worker_held_the_running_run_of_its_key_only():
    children = [ChildRun("held", DOT, "RUNNING", 1), ChildRun("beside", ADDITIVE, "RUNNING", 2), ChildRun("before", DOT, "FINISHED", 0)]
    assert held_by_lost_worker(children, DOT) == ["held"]
    assert held_by_lost_worker(children, ("date", "general", 0)) == []


def test_a_stopped_sweep_says_how_each_run_ended_and_what_to_do():
    line = stopped_sweep_line("lost Prefect's API server (http://h/api: connection refused)", "p1", ["FINISHED", "FAILED", "FAILED"], 4)
    assert line.startswith("lost Prefect's API server (http://h/api: connection refused); sweep run p1 ended FAILED; ")
    assert "of its 4 runs: 2 FAILED, 1 FINISHED, 1 not started; " in line
    assert "run the same sweep again with --resume" in line and "\n" not in line
    assert "of its 2 runs: none started; " in stopped_sweep_line("lost", "p1", [], 2)
