"""A tracking server that dies mid-run, with real processes: a real ``mlflow server`` on 127.0.0.1
killed with SIGKILL while a real ``attnlab train`` process logs to it. The command ends within a
minute with one line naming the server and the checkpoint it kept, SIGTERM acts at once, and the
run it had to leave RUNNING is ended FAILED by the next ``attnlab train`` against that store.
Also: the stale-run adapter on an embedded store (runs whose owner process is gone)."""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _flowkit import TrainProcess, is_progress_line, mlflow_server_command

ATTNLAB = str(Path(sys.executable).with_name("attnlab"))
#: Many short epochs: training is still going when the server is killed after the first one.
LONG = ["--epochs", "40", "--train-size", "300", "--hidden-size", "16", "--embedding-dim", "8",
        "-o", "validation_size=30", "-o", "test_size=30", "-o", "target_exact_match=null"]  # fmt: skip
SHORT = ["--epochs", "1", "--train-size", "100", "--hidden-size", "8", "--embedding-dim", "8",
         "-o", "validation_size=20", "-o", "test_size=20", "-o", "explain_examples=0"]  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    """Start a real ``mlflow server`` on the store in ``tmp_path`` (callable again after a kill:
    the same database and artifacts on a new port); its URL. Stopped at the end."""
    from attnlab.flows.services.servers import Server, mlflow_server_env, wait_healthy

    started = []

    def start() -> tuple[str, Server]:
        port = free_port()
        command = mlflow_server_command(port, tmp_path)
        server = Server("MLflow", command, f"http://127.0.0.1:{port}/health", tmp_path / "mlflow-server.log", mlflow_server_env()).start()
        started.append(server)
        wait_healthy([server], timeout=600)  # a hang guard: the event is /health answering
        return f"http://127.0.0.1:{port}", server

    yield start
    for server in started:
        server.stop()


class Train(TrainProcess):
    """A real ``attnlab train`` process against ``url``; its stderr collected line by line."""

    def __init__(self, url: str, cache: Path, args: list[str]):
        from prefect.settings import get_current_settings

        env = {**os.environ, "MLFLOW_TRACKING_URI": url, "ATTNLAB_CACHE_DIR": str(cache),
               "PREFECT_API_URL": str(get_current_settings().api.url)}  # the session's test server  # fmt: skip
        for name in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "MLFLOW_HTTP_REQUEST_TIMEOUT"):
            env.pop(name, None)  # the product's defaults, as a user gets them
        super().__init__(args, env, cache.parent, whole_epoch=True)  # a checkpoint is written by then


def kill_after_first_epoch(train: Train, server) -> float:
    """SIGKILL the server's process group once epoch 1 is printed; the time of the kill."""
    assert train.reached_epoch_one(), "\n".join(train.lines)
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait()
    return time.monotonic()


def run_status(url: str, run_id: str):
    from mlflow import MlflowClient

    return MlflowClient(url).get_run(run_id)


@pytest.mark.slow
def test_killed_server_ends_train_in_one_line_keeps_checkpoint_and_next_train_fails_the_run(tmp_path, mlflow_server):
    import torch

    url, server = mlflow_server()
    train = Train(url, tmp_path / "cache", LONG)
    killed = kill_after_first_epoch(train, server)
    code = train.wait(timeout=120)
    seconds = time.monotonic() - killed
    stderr = "\n".join(train.lines)
    print(f"ended {seconds:.1f} s after the server was killed; stderr:\n{stderr}")
    assert code == 2 and seconds < 60, stderr
    assert "Traceback" not in stderr and "Retrying" not in stderr, stderr
    # Progress lines, then one error line naming the server, the kept checkpoint and the run.
    assert all(is_progress_line(line) for line in train.lines[:-1]), stderr
    last = train.lines[-1]
    assert last.startswith(f"attnlab: error: lost the MLflow tracking server {url} (connection refused); "), last
    checkpoint = Path(re.search(r"checkpoint is kept at (\S+);", last).group(1))
    assert checkpoint.is_relative_to(tmp_path / "cache") and checkpoint.exists()
    assert torch.load(checkpoint, weights_only=True)["history"][0]["epoch"] == 1
    run_id = re.search(r"run (\w+) stays RUNNING", last).group(1)

    # The server returns: the run is still RUNNING (its process could not end it) until the next
    # train against that store finds its owner gone and ends it FAILED.
    url, _ = mlflow_server()
    assert run_status(url, run_id).info.status == "RUNNING"
    again = Train(url, tmp_path / "cache", SHORT)
    assert again.wait(timeout=180) == 0, "\n".join(again.lines)
    assert f"run {run_id} was left RUNNING (its process" in "\n".join(again.lines)
    assert [p.name for p in (tmp_path / "cache" / "checkpoints").iterdir()] == [run_id]  # a finished run's is gone
    run = run_status(url, run_id)
    assert run.info.status == "FAILED"
    assert "is gone" in run.data.tags["attnlab.ended_by"] and run.data.tags["attnlab.error"].startswith("stale run")


@pytest.mark.slow
def test_sigterm_acts_at_once_while_the_dead_server_is_retried(tmp_path, mlflow_server):
    url, server = mlflow_server()
    train = Train(url, tmp_path / "cache", LONG)
    kill_after_first_epoch(train, server)
    time.sleep(1.0)  # inside the retries of the next request
    train.process.send_signal(signal.SIGTERM)
    terminated = time.monotonic()
    code = train.wait(timeout=120)
    seconds = time.monotonic() - terminated
    stderr = "\n".join(train.lines)
    print(f"ended {seconds:.1f} s after SIGTERM; stderr:\n{stderr}")
    assert seconds < 30, stderr  # well inside the ~30 s of retries it would otherwise wait out
    assert code != 0 and "Traceback" not in stderr
    assert train.lines[-1].startswith("attnlab: error: "), stderr
    assert url in train.lines[-1] and "checkpoint is kept at" in train.lines[-1]


def test_runs_whose_owner_process_is_gone_end_failed_others_stay_running(empty_store):
    from attnlab.flows.tracking import runs as tracking
    from attnlab.flows.tracking import store
    from attnlab.ops import stale_runs
    from mlflow import MlflowClient

    where = store.use_store()
    client = MlflowClient(where.tracking_uri)
    experiment = tracking.ensure_experiment(client, "stale", where)
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = int(finished.stdout)  # a real process that has exited
    host, now = stale_runs.this_host(), time.time()
    runs = {
        "gone": stale_runs.owner_tags(host, gone, now),
        "alive": stale_runs.owner_tags(host, os.getpid(), now),
        "elsewhere-recent": stale_runs.owner_tags("another-host", gone, now),
        "elsewhere-silent": stale_runs.owner_tags("another-host", gone, now - 7 * 3600),
        "no-owner": {},
    }
    ids = {name: client.create_run(experiment, run_name=name, tags=tags).info.run_id for name, tags in runs.items()}
    ended = dict(tracking.end_stale_runs(client))
    assert set(ended) == {ids["gone"], ids["elsewhere-silent"]}
    assert f"its process {gone} on {host} is gone" == ended[ids["gone"]]
    status = {name: client.get_run(run_id).info.status for name, run_id in ids.items()}
    assert status == {
        "gone": "FAILED",
        "alive": "RUNNING",
        "elsewhere-recent": "RUNNING",
        "elsewhere-silent": "FAILED",
        "no-owner": "RUNNING",
    }
    assert tracking.end_stale_runs(client) == []  # ended once


# --------------------------------------------------------------------------- a busy server


class RetryWatch(logging.Handler):
    """Sets ``retried`` when the store check says it will ask again."""

    def __init__(self) -> None:
        super().__init__()
        self.retried = threading.Event()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        self.retried.set()


@pytest.fixture
def retry_watch():
    watch = RetryWatch()
    logger = logging.getLogger("attnlab.tracking")
    logger.addHandler(watch)
    yield watch
    logger.removeHandler(watch)


@pytest.mark.slow
def test_a_server_that_answers_late_is_asked_again_until_it_answers(mlflow_server, retry_watch):
    """A real server frozen with SIGSTOP (it accepts connections, answers nothing) while the
    store check runs, resumed once the check has retried: the check succeeds."""
    from attnlab.flows.tracking.store import Store, check_store

    url, server = mlflow_server()
    outcome: list[BaseException | None] = []
    os.killpg(server.process.pid, signal.SIGSTOP)
    try:
        checker = threading.Thread(target=lambda: outcome.append(_error_of(check_store, Store(url), timeout=1.0)))
        checker.start()
        assert retry_watch.retried.wait(120), "the check never retried"
    finally:
        os.killpg(server.process.pid, signal.SIGCONT)
    checker.join()
    assert outcome == [None], outcome
    assert "answers late (no answer in time); asking again" in retry_watch.lines[0]


def test_an_absent_server_is_one_line_at_once_without_retries(retry_watch):
    import socket

    from attnlab.flows.tracking.errors import TrackingUnavailable
    from attnlab.flows.tracking.store import Store, check_store

    # A port held bound but not listening refuses every connection, and no server another test
    # starts can take it meanwhile (a port only probed free can be: then the first answer differs).
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{holder.getsockname()[1]}"
        with pytest.raises(TrackingUnavailable) as raised:
            check_store(Store(url))
    assert str(raised.value).startswith(f"cannot reach the MLflow tracking store {url}: connection refused;")
    assert retry_watch.lines == []


def _error_of(function, *args, **kwargs) -> BaseException | None:
    try:
        function(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001  handed to the test thread
        return exc
    return None
