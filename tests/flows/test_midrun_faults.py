"""Faults in the middle of a run, with real processes: Prefect's temporary server killed, the disk
filled (a real small tmpfs), the store's artifacts folder deleted. Each ends a real ``attnlab
train`` process within 30 s in one line naming what was lost, the run and its checkpoint, with
the run ended FAILED (or, when not even that can be written, ended by the next command) and the
champion untouched. Nothing is left running."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest
from _disks import fill, small_tmpfs
from _flowkit import TrainProcess, client_for, is_progress_line
from _session_prefect import seed_home

ATTNLAB = str(Path(sys.executable).with_name("attnlab"))
#: Many short epochs: training is still going when the fault comes after the first one.
LONG = ["--epochs", "40", "--train-size", "600", "--hidden-size", "16", "--embedding-dim", "8",
        "-o", "validation_size=30", "-o", "test_size=30", "-o", "target_exact_match=null"]  # fmt: skip
#: How soon after the fault the command must have ended.
BOUND = 30.0


class Train(TrainProcess):
    """A real ``attnlab train`` process on the store ``store``; ``env`` entries of None are
    removed from its environment."""

    def __init__(self, store: Path, cache: Path, args: list[str], env: dict[str, str | None] | None = None):
        settings = {"ATTNLAB_MLFLOW_DIR": str(store), "ATTNLAB_CACHE_DIR": str(cache), "MLFLOW_TRACKING_URI": None, **(env or {})}
        full = {**os.environ, **{k: v for k, v in settings.items() if v is not None}}
        for name in (k for k, v in settings.items() if v is None):
            full.pop(name, None)
        super().__init__(args, full, cache.parent, whole_epoch=True)

    def wait_for_epoch_one(self) -> None:
        if not self.reached_epoch_one():
            self.process.kill()
            pytest.fail("no first epoch:\n" + self.stderr)


def ended_in_one_line(train: Train, since: float, lost: str) -> tuple[str, str]:
    """Assert the command ended within BOUND s of ``since`` with exit 2, progress lines, then one
    error line starting with ``lost``; (run id, that line)."""
    code = train.wait(timeout=300)
    seconds = time.monotonic() - since
    print(f"ended {seconds:.1f} s after the fault; stderr:\n{train.stderr}")
    assert code == 2 and seconds < BOUND, train.stderr
    assert "Traceback" not in train.stderr, train.stderr
    assert all(is_progress_line(line) for line in train.lines[:-1]), train.stderr
    last = train.lines[-1]
    assert last.startswith(f"attnlab: error: {lost}"), last
    assert "the champion is unchanged" in last
    return re.search(r"; run (\w+) ", last).group(1), last


def kept_checkpoint(line: str, cache: Path) -> Path:
    checkpoint = Path(re.search(r"the last checkpoint is kept at (\S+);", line).group(1))
    assert checkpoint.is_relative_to(cache) and checkpoint.exists(), line
    return checkpoint


def descendants_gone(pid_marker: str) -> bool:
    """True when no process has ``pid_marker`` in its command line (the server child of a train)."""
    for process in psutil.process_iter(["cmdline"]):
        if pid_marker in " ".join(process.info["cmdline"] or []):
            return False
    return True


@pytest.mark.slow
def test_prefect_server_killed_mid_run_ends_in_one_line_and_the_run_failed(tmp_path):
    """No PREFECT_API_URL: the command starts Prefect's temporary server itself; it is killed."""
    store, cache = tmp_path / "mlflow", tmp_path / "cache"
    env = {"PREFECT_HOME": str(seed_home(tmp_path / "prefect-home"))}
    train = Train(store, cache, LONG, env={**env, "PREFECT_API_URL": None})
    train.wait_for_epoch_one()
    child = f"attnlab.flows.services.server_child {train.process.pid} "
    servers = [p for p in psutil.process_iter(["cmdline"]) if child in " ".join(p.info["cmdline"] or [])]
    assert len(servers) == 1, "the command's temporary Prefect server"
    servers[0].send_signal(signal.SIGKILL)
    killed = time.monotonic()

    run_id, line = ended_in_one_line(train, killed, "lost Prefect's API server (http://127.0.0.1:")
    assert f"run {run_id} ended FAILED" in line and "run the command again" in line
    kept_checkpoint(line, cache)
    run = client_for(store).get_run(run_id)
    assert run.info.status == "FAILED" and "lost Prefect's API server" in run.data.tags["attnlab.error"]
    assert client_for(store).search_registered_models() == []  # nothing registered, no champion
    assert descendants_gone(child)


@pytest.fixture
def small_disk(tmp_path):
    """A real 64 MB tmpfs."""
    with small_tmpfs(tmp_path / "disk", "64m") as disk:
        yield disk


@pytest.mark.slow
def test_a_disk_filled_mid_run_ends_in_one_line_and_the_next_command_ends_the_run(small_disk):
    from prefect.settings import get_current_settings

    store, cache = small_disk / "mlflow", small_disk / "cache"
    train = Train(store, cache, LONG, env={"PREFECT_API_URL": str(get_current_settings().api.url)})
    train.wait_for_epoch_one()
    filler = fill(small_disk)
    filled = time.monotonic()

    run_id, line = ended_in_one_line(train, filled, f"the disk of {small_disk}")
    assert " is full; " in line and "free some space there and run the command again" in line
    kept_checkpoint(line, cache)
    if f"run {run_id} ended FAILED; " in line:  # the failed write's partial file, removed, left room for the run's end
        filler.unlink()
        assert client_for(store).get_run(run_id).info.status == "FAILED"
        return
    # The database could not take the run's end either: the next command ends it, once there is room.
    assert f"run {run_id} stays RUNNING until the next 'attnlab train' against that store ends it FAILED" in line
    filler.unlink()
    env = {key: value for key, value in os.environ.items() if key != "MLFLOW_TRACKING_URI"}  # this store, not another test's
    listed = subprocess.run([ATTNLAB, "runs", "--stale", "--end"], env={**env, "ATTNLAB_MLFLOW_DIR": str(store)},
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert listed.returncode == 0 and run_id[:8] in listed.stdout, listed.stdout + listed.stderr
    assert client_for(store).get_run(run_id).info.status == "FAILED"


@pytest.mark.slow
def test_the_artifacts_folder_deleted_mid_run_ends_in_one_line_and_the_champion_stays(capsys, learned_store, tmp_path, monkeypatch):
    from _flowkit import point_at
    from prefect.settings import get_current_settings
    from test_store_integrity import attnlab

    from attnlab.flows.tracking.registry import CHAMPION

    store, cache = tmp_path / "mlflow", tmp_path / "cache"
    shutil.copytree(learned_store[0], store, symlinks=True)  # a store with a champion
    point_at(store, monkeypatch)
    assert attnlab(capsys, "store", "relocate")[0] == 0
    env = {"PREFECT_API_URL": str(get_current_settings().api.url)}
    champion = client_for(store).get_registered_model("attnlab-date").aliases[CHAMPION]

    train = Train(store, cache, LONG, env=env)
    train.wait_for_epoch_one()
    shutil.rmtree(store / "artifacts")
    deleted = time.monotonic()
    run_id, line = ended_in_one_line(
        train, deleted, f"the MLflow store's artifacts folder {store / 'artifacts'} was deleted during the run"
    )
    epochs = [line for line in train.lines if " train_loss " in line and "step" not in line]
    assert len(epochs) <= 5, "noticed at the next epoch, not after all 40"
    assert f"run {run_id} ended FAILED" in line and "restore it from a backup" in line
    assert client_for(store).get_run(run_id).info.status == "FAILED"
    assert client_for(store).get_registered_model("attnlab-date").aliases[CHAMPION] == champion


def test_a_store_whose_artifacts_folder_is_gone_is_refused_before_a_run(capsys, learned_store, tmp_path, monkeypatch):
    from _flowkit import assert_one_line_error, point_at
    from test_store_integrity import attnlab

    copy = tmp_path / f"store-{uuid.uuid4().hex[:6]}"
    shutil.copytree(learned_store[0], copy, symlinks=True)
    point_at(copy, monkeypatch)
    assert attnlab(capsys, "store", "relocate")[0] == 0
    shutil.rmtree(copy / "artifacts")
    code, out, err = attnlab(capsys, "train", "--epochs", "1")
    assert code == 2 and out == ""
    assert_one_line_error(
        err, f"the MLflow store {copy / 'mlflow.db'} records ", f"but {copy / 'artifacts'}, which holds their files, is missing"
    )
    assert not (copy / "artifacts").exists()  # refused before anything was written
