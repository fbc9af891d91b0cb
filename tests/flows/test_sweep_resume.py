"""attnlab sweep --resume: a sweep started again trains only the runs no earlier sweep finished."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _flowkit import client_for

from attnlab.flows.cli import app as cli
from attnlab.ops.sweep_resume import RUN_KEY, SUMMARY_ARTIFACT

#: Reversal, a second or two per run; the scorers are added by each test.
TINY = (
    "sweep", "--task", "reverse", "--encoder", "gru", "--seeds", "0", "--epochs", "2", "--train-size", "200",
    "--hidden-size", "16", "-o", "embedding_dim=8", "-o", "validation_size=30", "-o", "test_size=40",
    "-o", "task.max_length=10", "-o", "explain_examples=0", "--runner", "thread", "--json",
)  # fmt: skip


def sweep(capsys, *args: str) -> tuple[dict, str]:
    code = cli.main([*TINY, *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


@pytest.mark.slow
def test_a_resumed_sweep_reuses_the_finished_runs_and_trains_only_the_rest(capsys, empty_store, tmp_path):
    first, _ = sweep(capsys, "--scorer", "dot")
    client = client_for(empty_store)
    [dot_run] = [row["run_id"] for row in first["run_table"]]
    assert client.get_run(dot_run).data.tags[RUN_KEY]  # every finished sweep run keeps its key and summary
    kept = Path(client.download_artifacts(dot_run, SUMMARY_ARTIFACT, str(tmp_path)))
    assert json.loads(kept.read_text())["run_id"] == dot_run

    second, err = sweep(capsys, "--scorer", "dot,additive", "--resume")
    assert "resumed: 1 of 2 runs already finished" in err
    assert second["reused"] == 1 and second["run_count"] == 2 and second["failed"] == 0
    rows = {row["label"]: row for row in second["run_table"]}
    assert rows["dot"]["run_id"] == dot_run  # reused, not trained again
    assert rows["additive"]["run_id"] != dot_run and rows["additive"]["status"] == "FINISHED"
    assert rows["dot"]["exact_match"] == first["run_table"][0]["exact_match"]
    parent = client.get_run(second["parent_run_id"])
    assert parent.data.params["reused_runs"] == "1 of 2"
    trained = client.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{second['parent_run_id']}'")
    assert [run.data.tags["scorer"] for run in trained] == ["additive"]
    assert {row["label"] for row in second["table"]} == {"dot", "additive"}

    # Without --resume every run trains again; a changed config is another run, not a reused one.
    third, _ = sweep(capsys, "--scorer", "dot", "-o", "learning_rate=0.004", "--resume")
    assert third["reused"] == 0 and third["run_table"][0]["run_id"] not in {dot_run, rows["additive"]["run_id"]}
