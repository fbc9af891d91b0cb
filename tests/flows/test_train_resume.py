"""attnlab train --resume: a run cut off (its process killed, as a job cut on a shared machine is)
continues from its last checkpoint in the same MLflow run; refusals are one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _flowkit import TINY, assert_one_line_error, client_for

from attnlab.flows.cli import app as cli

EPOCHS = 4


def attnlab(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def cut_after_epoch_2(options: list[str]) -> None:
    """Start ``attnlab train`` and SIGKILL its process group once epoch 2 ended: nothing of the
    run is ended or uploaded, the checkpoint stays on local disk."""
    command = [str(Path(sys.executable).with_name("attnlab")), "train", *options]
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    while not any(line.startswith(f"epoch   2/{EPOCHS}  train_loss") for line in seen):
        line = process.stderr.readline()
        assert line, "".join(seen)
        seen.append(line)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    process.stderr.close()


@pytest.mark.slow
def test_a_cut_off_run_resumes_from_its_last_checkpoint_in_the_same_run(capsys, empty_store):
    options = [f"-o{key}={value}" for key, value in {**TINY, "epochs": EPOCHS, "target_exact_match": "null"}.items()]
    cut_after_epoch_2(options)
    client = client_for(empty_store)
    (run,) = client.search_runs([client.get_experiment_by_name("attnlab-date").experiment_id])
    assert run.info.status == "RUNNING"

    code, out, err = attnlab(capsys, "train", "--resume", run.info.run_id, "--json")
    assert code == 0, err
    assert f"resuming run {run.info.run_id}" in err
    assert "epoch   1/" not in err and "epoch   2/" not in err and f"epoch   4/{EPOCHS}" in err  # only the epochs left
    resumed = client.get_run(run.info.run_id)
    assert resumed.info.status == "FINISHED" and "attnlab.error" not in resumed.data.tags
    steps = [m.step for m in client.get_metric_history(run.info.run_id, "val_exact_match")]
    assert sorted(steps) == [1, 2, 3, 4]  # one value per epoch, in the one run
    assert resumed.data.metrics["epochs_trained"] == EPOCHS and "test_exact_match" in resumed.data.metrics
    trained = client.search_runs([run.info.experiment_id], f"params.epochs = '{EPOCHS}'")
    assert [r.info.run_id for r in trained] == [run.info.run_id]  # no second run

    code, _, err = attnlab(capsys, "train", "--resume", run.info.run_id)
    assert code == 2
    assert_one_line_error(err, "is FINISHED: nothing to resume")


def test_resume_refuses_an_unknown_run_and_a_config_beside_it(capsys, empty_store):
    code, _, err = attnlab(capsys, "train", "--resume", "0123456789abcdef0123456789abcdef")
    assert code == 2
    assert_one_line_error(err, "no such run")
    code, _, err = attnlab(capsys, "train", "--resume", "0123456789abcdef0123456789abcdef", "--epochs", "9", "-o", "seed=1")
    assert code == 2
    assert_one_line_error(err, "leave out --epochs, -o")
