"""attnlab tune against the real embedded store: trials as child runs of one parent, the best
config trained again, pruning, a killed tune resumed to its N trials, Ctrl-C, bad spaces."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _flowkit import assert_one_line_error, client_for, terminal_popen
from test_sweep_faults import _running_with_an_epoch

from attnlab.flows.cli import app as cli

SPACE = """
space:
  learning_rate: {low: 1.0e-3, high: 2.0e-2, log: true}
  hidden_size: {low: 16, high: 32, step: 16}
  lr_schedule: [constant, cosine]
pruner: {name: median, startup_trials: 1}
"""
#: The arm and each trial's budget: tiny reversal runs.
ARM = ["--task", "reverse", "--scorer", "dot", "--epochs", "2", "--train-size", "200", "-o", "embedding_dim=8",
       "-o", "validation_size=40", "-o", "test_size=40", "-o", "task.max_length=10", "-o", "explain_examples=0"]  # fmt: skip


def attnlab(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def space_file(folder: Path, text: str = SPACE) -> Path:
    path = folder / "space.yaml"
    path.write_text(text)
    return path


def children_of(client, parent_run_id: str) -> list:
    parent = client.get_run(parent_run_id)
    return client.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent_run_id}'")


@pytest.mark.slow
def test_a_tiny_tune_logs_its_trials_as_child_runs_and_its_best_config_trains(capsys, empty_store, tmp_path):
    """With ``baseline: true`` its first trial trains the config's own values."""
    best_file = tmp_path / "best.yaml"
    space = space_file(tmp_path, SPACE + "baseline: true\n")
    code, out, err = attnlab(capsys, "tune", "--space", str(space), "--trials", "3", *ARM, "-o", "learning_rate=0.004", "-o", "hidden_size=32",
                             "--runner", "thread", "--max-parallel", "2", "--save-best", str(best_file), "--json")  # fmt: skip
    assert code == 0, err
    assert "Traceback" not in err and err.count("trial ") >= 3 and "trial 0 (baseline): val_exact_match " in err
    summary = json.loads(out)
    assert summary["counted"] == 3 and [row["state"] for row in summary["trials"]] == ["COMPLETE"] * 3
    baseline = summary["trials"][0]
    assert baseline["note"] == "baseline" and [row["note"] for row in summary["trials"][1:]] == ["", ""]
    assert (baseline["param learning_rate"], baseline["param hidden_size"], baseline["param lr_schedule"]) == (0.004, 32, "constant")
    assert summary["storage"] == f"sqlite:///{empty_store / 'optuna.db'}" and summary["study"].startswith("tune-reverse-dot-gru-rnn-")
    client = client_for(empty_store)
    parent = client.get_run(summary["parent_run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["attnlab.tune"] == "parent"
    assert parent.data.tags["attnlab.pid"] == str(os.getpid())  # its owner: found stale if that process dies
    assert parent.data.params["space.learning_rate"] == "float [0.001, 0.02] log" and parent.data.params["epochs"] == "2"
    children = children_of(client, summary["parent_run_id"])
    assert sorted(int(c.data.tags["attnlab.tune.trial"]) for c in children) == [0, 1, 2]
    assert {c.info.status for c in children} == {"FINISHED"}
    by_trial = {int(c.data.tags["attnlab.tune.trial"]): c for c in children}
    for row in summary["trials"]:  # the value told to Optuna is the run's own validation score
        run = by_trial[row["trial"]]
        assert row["run_id"] == run.info.run_id and row["value"] == pytest.approx(run.data.metrics["selected_val_exact_match"])
        assert float(run.data.params["learning_rate"]) == pytest.approx(row["param learning_rate"])
    artifacts = {a.path for folder in ("tables", "plots", "best") for a in client.list_artifacts(parent.info.run_id, folder)}
    assert {"tables/trials.json", "plots/optimization_history.png", "plots/param_importances.png", "best/config.yaml"} <= artifacts
    best_text = Path(client.download_artifacts(parent.info.run_id, "best/config.yaml", str(tmp_path))).read_text()
    assert best_text == best_file.read_text() == summary["best_config"]
    best_run = by_trial[summary["best"]["trial"]]

    # The best config trains as it is, with attnlab train --config.
    code, out, err = attnlab(capsys, "train", "--config", str(best_file), "--json")
    assert code == 0, err
    trained = json.loads(out)
    run = client.get_run(trained["run_id"])
    for key in ("learning_rate", "hidden_size", "lr_schedule", "embedding_dim", "train_size", "scorer"):
        assert run.data.params[key] == best_run.data.params[key], key


@pytest.mark.slow
def test_a_pruned_trial_ends_killed_and_tagged_not_failed(capsys, empty_store, tmp_path):
    space = space_file(tmp_path, "space:\n  learning_rate: [0.001, 0.002]\npruner: {name: threshold, lower: 0.999}\n")
    code, out, err = attnlab(capsys, "tune", "--space", str(space), "--trials", "1", *ARM, "--runner", "thread", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert [row["state"] for row in summary["trials"]] == ["PRUNED"] and summary["best"] is None and summary["best_config"] is None
    (run,) = children_of(client_for(empty_store), summary["parent_run_id"])
    assert run.info.status == "KILLED" and run.data.tags["attnlab.tune.state"] == "PRUNED"
    assert run.data.tags["attnlab.pruned"].startswith("pruned at epoch 1 by the threshold pruner: val_exact_match ")
    assert "attnlab.error" not in run.data.tags and "epochs_trained" not in run.data.metrics


def _tune(store: Path, tmp_path: Path, args: list[str]) -> subprocess.Popen:
    """A real ``attnlab tune`` process on ``store``, in a session of its own (a terminal's group)."""
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(store)}
    env.pop("MLFLOW_TRACKING_URI", None)
    command = [str(Path(sys.executable).with_name("attnlab")), "tune", *args]
    return terminal_popen(command, env=env, cwd=tmp_path, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _trial_states(store: Path) -> list[str]:
    """The states of the study's trials, read without locking or migrating its database."""
    database = store / "optuna.db"
    if not database.exists():
        return []
    try:
        with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as db:
            return [state for (state,) in db.execute("SELECT state FROM trials ORDER BY number").fetchall()]
    except sqlite3.Error:
        return []


def _until(process: subprocess.Popen, condition, what: str) -> None:
    """Wait for ``condition`` (the event, however slow the machine); a tune that ends first fails the test."""
    while not condition():
        if process.poll() is not None:
            pytest.fail(f"the tune ended (status {process.returncode}) before {what}: {process.stderr.read()[-3000:]}")
        time.sleep(0.5)


@pytest.mark.slow
def test_a_killed_tune_resumes_to_its_trials_without_repeating_one(empty_store, tmp_path):
    # Trials in the command's own process: resuming is the tune's, whatever runs its trials.
    args = ["--space", str(space_file(tmp_path)), "--trials", "3", *ARM, "--runner", "thread", "--max-parallel", "1", "--json"]
    process = _tune(empty_store, tmp_path, args)
    try:
        second_training = lambda: len(_running_with_an_epoch(empty_store / "mlflow.db")) == 1  # noqa: E731
        _until(process, lambda: _trial_states(empty_store)[:2] == ["COMPLETE", "RUNNING"] and second_training(), "its second trial trained")
        os.killpg(process.pid, signal.SIGKILL)  # a cut: nothing ends the second trial
        process.wait()
    finally:
        process.kill()
    assert _trial_states(empty_store) == ["COMPLETE", "RUNNING"]
    again = _tune(empty_store, tmp_path, args)
    out, err = again.communicate(timeout=1800)  # a hang guard only
    assert again.returncode == 0, err
    summary = json.loads(out)
    assert summary["resumed"] and [row["state"] for row in summary["trials"]] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    assert summary["trials"][1]["note"] == "interrupted" and summary["counted"] == 3
    client = client_for(empty_store)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    (parent,) = [run for run in runs if run.data.tags.get("attnlab.tune") == "parent"]  # the same parent, reopened
    assert parent.info.run_id == summary["parent_run_id"] and parent.info.status == "FINISHED"
    children = children_of(client, parent.info.run_id)
    assert sorted(int(c.data.tags["attnlab.tune.trial"]) for c in children) == [0, 1, 2, 3]  # trial 0 trained once
    assert {int(c.data.tags["attnlab.tune.trial"]): c.info.status for c in children}[1] == "KILLED"
    assert "RUNNING" not in {run.info.status for run in runs}
    params = [
        tuple(sorted((k, v) for k, v in row.items() if k.startswith("param "))) for row in summary["trials"] if row["state"] == "COMPLETE"
    ]
    assert len(set(params)) == 3  # a resumed sampler does not draw the first run's values again


@pytest.mark.slow
def test_ctrl_c_ends_every_trial_and_leaves_nothing_running(empty_store, tmp_path):
    import psutil

    long_trials = ["--epochs", "500", "-o", "target_exact_match=null"]
    process = _tune(
        empty_store, tmp_path, ["--space", str(space_file(tmp_path)), "--trials", "4", *ARM, *long_trials, "--max-parallel", "2"]
    )
    try:
        _until(process, lambda: len(_running_with_an_epoch(empty_store / "mlflow.db")) == 2, "two trials had logged an epoch")
        workers = psutil.Process(process.pid).children(recursive=True)
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=600)  # a hang guard only
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("attnlab: error: interrupted: the tune run and its unfinished trials ended KILLED")
    assert "Traceback" not in err and out == "", err  # all of it: a traceback here is a rare race
    client = client_for(empty_store)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert sorted(run.info.status for run in runs) == ["KILLED"] * 3  # the tune's run and both trials
    assert _trial_states(empty_store) == ["FAIL", "FAIL"]  # as interrupted: a rerun trains them again
    _, alive = psutil.wait_procs(workers, timeout=300)  # returns as soon as every worker has exited
    assert not [w for w in alive if w.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.parametrize(
    "space, args, needles",
    [
        ("space:\n  lerning_rate: {low: 0.001, high: 0.01}\n", [], ["unknown search space key 'lerning_rate'"]),
        ("space:\n  learning_rate: {low: 0.01, high: 0.01}\n", [], ["'learning_rate'", "is empty"]),
        ("space:\n  learning_rate: {low: 0.1, high: 0.01}\n", [], ["low 0.1 is above high 0.01"]),
        ("space:\n  learning_rate: {low: 0, high: 0.01, log: true}\n", [], ["a log scale needs low > 0"]),
        ("space:\n  scorer.heads: [2, 3]\n", ["--scorer", "multihead", "--hidden-size", "16"], ["search space at scorer.heads=3", "heads"]),
        ("space:\n  scorer.width: [2, 4]\n", [], ["search space at scorer.width=2", "unknown option", "width"]),
        ("space:\n  dropout: {low: 0.0, high: 1.5}\n", [], ["search space at dropout=1.5", "bad value 1.5 for dropout"]),
        (
            "space:\n  learning_rate: [0.001, 0.01]\nbaseline: true\n",
            [],
            ["baseline: the config's learning_rate 0.005 is outside the space"],
        ),
        ("space:\n  dropout: [0.1]\n", ["--trials", "0"], ["--trials 0: give at least 1"]),
        ("space:\n  dropout: [0.1]\n", ["--timeout", "soon"], ["--timeout 'soon'"]),
    ],
)
def test_a_bad_search_space_is_refused_in_one_line_before_anything_trains(capsys, empty_store, tmp_path, space, args, needles):
    code, out, err = attnlab(capsys, "tune", "--space", str(space_file(tmp_path, space)), "--task", "reverse", *args)
    assert code == 2 and out == ""
    assert_one_line_error(err, *needles)
    assert not (empty_store / "mlflow.db").exists() and not (empty_store / "optuna.db").exists()
