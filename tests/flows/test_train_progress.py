"""Progress inside an epoch as a user sees it: the bar of ``attnlab train`` on a terminal, plain
lines when stderr is piped or with --json (stdout stays one JSON object), and the training loss
inside epochs as an MLflow curve."""

from __future__ import annotations

import io
import json
import logging
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _flowkit import TINY, client_for

from attnlab.flows.cli import app as cli
from attnlab.flows.cli.progress_display import ProgressDisplay
from attnlab.flows.tracking.step_log import STEP_METRIC, StepLog
from attnlab.training.progress import StepProgress

TINY_ARGS = [f"-o{key}={value}" for key, value in TINY.items()]


def _progress(step: int, steps: int = 8, epoch: int = 1) -> StepProgress:
    return StepProgress(epoch, 2, step, steps, (epoch - 1) * steps + step, step * 4, steps * 4, 2.0 / step, 1.5, 900.0)


def _step_record(progress: StepProgress) -> logging.LogRecord:
    return logging.makeLogRecord({"name": "attnlab.training.progress.steps", "msg": "%s", "args": (progress,), "step_progress": progress})


def test_plain_display_prints_epoch_lines_and_a_line_at_each_quarter():
    out = io.StringIO()
    display = ProgressDisplay(live=False, stream=out)
    for step in range(1, 9):
        display.handle(_step_record(_progress(step)))
    display.handle(logging.makeLogRecord({"msg": "epoch   1/2  train_loss 1.5000 ..."}))
    lines = out.getvalue().splitlines()
    assert [line.split()[3] for line in lines[:-1]] == ["2/8", "4/8", "6/8"]
    assert "train_loss 1.5000" in lines[0] and "900 samples/s" in lines[0]
    assert lines[-1] == "epoch   1/2  train_loss 1.5000 ..."


class _Client:
    """Records log_batch calls like MlflowClient would receive them."""

    def __init__(self) -> None:
        self.batches: list[list] = []

    def log_batch(self, run_id: str, metrics=()) -> None:
        self.batches.append(list(metrics))


def test_step_log_writes_the_curve_in_batches_at_epoch_ends_and_during_long_epochs():
    client, now = _Client(), [0.0]
    log = StepLog(client, "run", flush_seconds=30, clock=lambda: now[0])
    for step in range(1, 41):
        log.add(_progress(step, steps=40))
    assert client.batches == []  # nothing written step by step
    log.flush()  # the epoch's end
    (batch,) = client.batches
    assert [m.step for m in batch] == [2 * k for k in range(1, 21)] and {m.key for m in batch} == {STEP_METRIC}
    assert batch[0].value == pytest.approx((2.0 + 1.0) / 2)  # the mean of the steps since the last point
    now[0] = 31.0  # a long epoch: the points so far are written without waiting for its end
    log.add(_progress(1, steps=40, epoch=2))
    log.add(_progress(2, steps=40, epoch=2))
    assert [m.step for m in client.batches[-1]] == [42]


@pytest.mark.slow
def test_piped_json_train_prints_plain_progress_and_logs_a_loss_curve(capsys, empty_store):
    code = cli.main(["train", *TINY_ARGS, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)  # stdout is the one JSON object, nothing else
    assert out.count("\n") == 1
    lines = err.splitlines()
    assert any(" step 1/4 " in line and "samples/s" in line for line in lines), err
    assert sum(" step " in line for line in lines) >= 4 and sum("val_exact_match" in line for line in lines) == 2
    history = client_for(empty_store).get_metric_history(summary["run_id"], STEP_METRIC)
    assert sorted(m.step for m in history) == list(range(1, 9))  # 4 steps an epoch, a point each


def _run_in_terminal(args: list[str], env: dict[str, str], timeout: float) -> tuple[int, str]:
    """Run ``args`` with stdin, stdout and stderr on a pseudo-terminal; (exit status, output)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(args, stdin=follower, stdout=follower, stderr=follower, env=env, start_new_session=True)
    os.close(follower)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not chunk:
                break
            chunks.append(chunk)
        return process.wait(timeout=timeout), b"".join(chunks).decode(errors="replace")
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()


@pytest.mark.slow
def test_train_on_a_terminal_shows_a_progress_bar(tmp_path):
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(tmp_path / "mlflow"), "TERM": "xterm-256color", "COLUMNS": "120"}
    env.pop("MLFLOW_TRACKING_URI", None)
    script = str(Path(sys.executable).with_name("attnlab"))
    code, output = _run_in_terminal([script, "train", *TINY_ARGS, "-obatch_size=16"], env, timeout=600)
    assert code == 0, output
    output = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", output)  # colours and cursor moves
    assert "━" in output and "epoch 1/2" in output and "samples/s" in output, output  # the bar, drawn
    assert "13/13 steps" in output and "epoch 2/2" in output, output  # 200 examples in batches of 16
    assert "val_exact_match" in output and "FINISHED" in output
    assert " step 3/13 " not in output  # on a terminal the bar replaces the plain lines
