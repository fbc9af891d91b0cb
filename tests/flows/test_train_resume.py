"""attnlab train --resume: a run cut off (its process killed, as a job cut on a shared machine is)
continues from its last checkpoint in the same MLflow run; refusals are one line (a damaged
checkpoint says the choices left); a second resume of a run being resumed is refused, and a
resume killed on the way does not block the next."""

from __future__ import annotations

import contextlib
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


def cut_after_epoch(options: list[str], epoch: int = 2, epochs: int = EPOCHS) -> subprocess.Popen:
    """Run ``attnlab train`` with ``options`` (a run of ``epochs`` epochs) and SIGKILL its
    process group once epoch ``epoch`` ended: nothing of the run is ended or uploaded, the
    checkpoint stays on local disk. The process, ended."""
    process = train_until_epoch(options, epoch, epochs)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    process.stderr.close()
    return process


def train_until_epoch(options: list[str], epoch: int, epochs: int) -> subprocess.Popen:
    """``attnlab train`` with ``options`` in a session of its own, once it has printed the end of
    epoch ``epoch`` of ``epochs`` (the event: that line; a process that ends first fails the test)."""
    command = [str(Path(sys.executable).with_name("attnlab")), "train", *options]
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    while not any(line.startswith(f"epoch {epoch:>3}/{epochs}  train_loss") for line in seen):
        line = process.stderr.readline()
        assert line, "".join(seen)
        seen.append(line)
    return process


def cut_after_epoch_2(options: list[str]) -> None:
    cut_after_epoch(options)


def only_run(client):
    (run,) = client.search_runs([client.get_experiment_by_name("attnlab-date").experiment_id])
    return run


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


@pytest.mark.slow
def test_two_resumes_at_once_one_is_refused_and_a_killed_resume_blocks_nothing(capsys, empty_store):
    import threading

    epochs = 40
    options = [f"-o{key}={value}" for key, value in {**TINY, "epochs": epochs, "target_exact_match": "null"}.items()]
    cut_after_epoch(options, epochs=epochs)
    client = client_for(empty_store)
    run_id = only_run(client).info.run_id

    # Two resumes started together: both would find the run resumable (each reopens it only
    # seconds after its check); one holds the run's resume lock, the other is refused.
    command = [str(Path(sys.executable).with_name("attnlab")), "train", "--resume", run_id]
    both = [subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]  # fmt: skip
    lines: dict[int, list[str]] = {0: [], 1: []}
    training: set[int] = set()  # the resumes that trained an epoch, each held there (SIGSTOP)

    def read(index: int) -> None:
        for line in both[index].stderr:
            lines[index].append(line.rstrip("\n"))
            if line.startswith(f"epoch   3/{epochs}  train_loss"):
                os.killpg(both[index].pid, signal.SIGSTOP)
                training.add(index)

    readers = [threading.Thread(target=read, args=(index,), daemon=True) for index in range(2)]
    for reader in readers:
        reader.start()
    try:
        # The events: one of them ends, or both train (then both are held, and this fails).
        while all(process.poll() is None for process in both) and len(training) < 2:
            readers[0].join(0.2)
        assert len(training) < 2, "both resumes trained the run side by side"
        refused = next(index for index, process in enumerate(both) if process.poll() is not None)
        winner = both[1 - refused]
        readers[refused].join(60)
        assert both[refused].returncode == 2
        assert_one_line_error("\n".join(lines[refused]), f"run {run_id} is being resumed by process {winner.pid} on ", "wait for that one")
        # The winner, killed mid-way once it trained an epoch (SIGKILL: no cleanup at all), takes
        # its lock with it: a new resume goes on and finishes the run.
        while not training and winner.poll() is None:  # the event: its epoch line
            readers[1 - refused].join(0.2)
        assert training == {1 - refused}, lines[1 - refused]
    finally:
        for process in both:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
    code, _, err = attnlab(capsys, "train", "--resume", run_id)
    assert code == 0, err
    steps = [m.step for m in client.get_metric_history(run_id, "val_exact_match")]
    assert sorted(steps) == list(range(1, epochs + 1))  # every epoch once: never two resumes side by side
    assert client.get_run(run_id).info.status == "FINISHED"


@pytest.mark.slow
def test_a_damaged_checkpoint_is_one_line_that_says_the_choices(capsys, empty_store):
    from attnlab.flows.run.steps import checkpoint_path

    options = [f"-o{key}={value}" for key, value in {**TINY, "epochs": EPOCHS, "target_exact_match": "null"}.items()]
    cut_after_epoch_2(options)
    client = client_for(empty_store)
    run_id = only_run(client).info.run_id
    checkpoint = checkpoint_path(run_id)
    checkpoint.write_bytes(checkpoint.read_bytes()[: checkpoint.stat().st_size // 2])  # cut in half
    code, out, err = attnlab(capsys, "train", "--resume", run_id)
    assert code == 2 and out == ""
    assert_one_line_error(
        err,
        f"run {run_id} cannot be resumed: its checkpoint is damaged (",
        str(checkpoint),
        "start a new run instead ('attnlab train' with the same options), or resume another run ('attnlab runs' lists them)",
    )
    assert client.get_run(run_id).info.status == "RUNNING"  # not reopened: left as the cut left it
