"""A sweep under load and faults: eight processes logging into one store at once (embedded and
a real tracking server), and a sweep terminated mid-run."""

from __future__ import annotations

import contextlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from _flowkit import client_for, mlflow_server_command, preloaded_processes
from _session_prefect import seed_home
from _store_processes import log_epochs


@pytest.fixture
def tracking_server(tmp_path):
    """A real ``mlflow server`` on 127.0.0.1 with a SQLite backend; its URL."""
    import socket

    from attnlab.flows.services.servers import Server, mlflow_server_env, wait_healthy

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = mlflow_server_command(port, tmp_path)
    url = f"http://127.0.0.1:{port}"
    server = Server("MLflow", command, f"{url}/health", tmp_path / "mlflow-server.log", mlflow_server_env()).start()
    try:
        wait_healthy([server], timeout=600)  # a hang guard: the event is /health answering
        yield url
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("store", ["embedded", "server"])
def test_eight_processes_logging_at_once_lose_nothing(tmp_path, monkeypatch, request, store):
    from mlflow import MlflowClient

    epochs = 30
    if store == "server":
        where = request.getfixturevalue("tracking_server")
        monkeypatch.setenv("MLFLOW_TRACKING_URI", where)  # past the autouse guard against servers
    else:
        where = str(tmp_path / "mlflow")
        monkeypatch.setenv("ATTNLAB_MLFLOW_DIR", where)
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    from attnlab.flows.tracking import store as tracking_store

    resolved = tracking_store.resolve_store()
    tracking_store.check_store(resolved)  # created first, as a sweep's parent run does
    with ProcessPoolExecutor(8, mp_context=preloaded_processes()) as pool:
        run_ids = list(pool.map(log_epochs, [(where, str(i), epochs) for i in range(8)]))
    client = MlflowClient(resolved.tracking_uri)
    assert len(set(run_ids)) == 8
    for run_id in run_ids:
        assert client.get_run(run_id).info.status == "FINISHED"
        for key in ("train_loss", "val_loss", "val_exact_match", "epoch_seconds", "samples_per_second"):
            history = client.get_metric_history(run_id, key)
            assert sorted(m.step for m in history) == list(range(1, epochs + 1)), key


def _runs_with_an_epoch(database: Path) -> int:
    """How many runs have logged a validation loss, read without creating or migrating the store
    (a second writer while the sweep creates it would race its schema migration)."""
    import sqlite3

    if not database.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as db:
            return db.execute("SELECT COUNT(DISTINCT run_uuid) FROM metrics WHERE key = 'val_loss'").fetchone()[0]
    except sqlite3.Error:  # the tables are not there yet, or the database is being written
        return 0


@pytest.mark.slow
def test_a_terminated_sweep_ends_every_run_killed_and_leaves_no_worker(empty_store, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    # Small epochs, many of them: both runs are training when the signal comes, however fast the machine.
    long_sweep = ["sweep", "--task", "reverse", "--scorer", "dot,additive", "--epochs", "500", "--train-size", "600",
                  "--hidden-size", "16", "-o", "embedding_dim=8", "-o", "validation_size=30", "-o", "test_size=30",
                  "-o", "target_exact_match=null"]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "attnlab.flows.cli.app", *long_sweep],
        env={**os.environ, "ATTNLAB_MLFLOW_DIR": str(empty_store)},
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # Wait for the event (both runs have logged an epoch), however slow the machine; a sweep
        # that ends first fails the test with what it said.
        while process.poll() is None:
            time.sleep(0.5)
            if _runs_with_an_epoch(empty_store / "mlflow.db") == 2:
                break
        else:
            pytest.fail(
                f"the sweep ended (status {process.returncode}) before both runs had logged an epoch: {process.stderr.read()[-2000:]}"
            )
        workers = psutil.Process(process.pid).children(recursive=True)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=900)  # a hang guard only: SIGTERM acts within seconds
    finally:
        process.kill()
    assert process.returncode == 130
    assert err.strip().splitlines()[-1].startswith("attnlab: error: interrupted") and "Traceback" not in err, err
    runs = client_for(empty_store).search_runs([e.experiment_id for e in client_for(empty_store).search_experiments()])
    assert sorted(r.info.status for r in runs) == ["KILLED"] * 3  # the sweep run and both runs
    _, alive = psutil.wait_procs(workers, timeout=300)  # returns as soon as every worker has exited
    assert not [w for w in alive if w.status() != psutil.STATUS_ZOMBIE]


def _running_with_an_epoch(database: Path) -> dict[str, tuple[str, int]]:
    """Run id -> (run name, owner pid) of the RUNNING runs that have logged a validation loss,
    read without creating or migrating the store."""
    import sqlite3

    if not database.exists():
        return {}
    query = """SELECT r.run_uuid, r.name, t.value FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid AND t.key = 'attnlab.pid'
               WHERE r.status = 'RUNNING' AND EXISTS (SELECT 1 FROM metrics m WHERE m.run_uuid = r.run_uuid AND m.key = 'val_loss')"""
    try:
        with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as db:
            return {run: (name, int(pid)) for run, name, pid in db.execute(query).fetchall()}
    except sqlite3.Error:  # the tables are not there yet, or the database is being written
        return {}


def _sweep(store: Path, tmp_path: Path, args: list[str], **env: str | None):
    """A real ``attnlab sweep`` process on ``store``; ``env`` entries of None are removed."""
    import os
    import subprocess
    import sys

    full = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(store), **{k: v for k, v in env.items() if v is not None}}
    for name in [k for k, v in env.items() if v is None] + ["MLFLOW_TRACKING_URI"]:
        full.pop(name, None)
    command = [str(Path(sys.executable).with_name("attnlab")), "sweep", *args]
    return subprocess.Popen(command, env=full, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _until_running(process, store: Path, count: int) -> dict[str, tuple[str, int]]:
    """Wait for ``count`` runs of the sweep to be RUNNING with an epoch logged (the event, however
    slow the machine); a sweep that ends first fails the test with what it said."""
    import time

    while process.poll() is None:
        running = _running_with_an_epoch(store / "mlflow.db")
        if len(running) >= count:
            return running
        time.sleep(0.5)
    pytest.fail(f"the sweep ended (status {process.returncode}) before {count} runs had logged an epoch: {process.stderr.read()[-3000:]}")


#: Four runs, two at a time, of many short epochs: training is still going when the fault comes.
FOUR_LONG = ["--task", "date", "--scorer", "dot,additive", "--seeds", "0,1", "--max-parallel", "2", "--epochs", "40",
             "--train-size", "600", "--hidden-size", "16", "-o", "embedding_dim=8", "-o", "validation_size=30",
             "-o", "test_size=30", "-o", "target_exact_match=null", "-o", "explain_examples=0"]  # fmt: skip


@pytest.mark.slow
def test_prefect_killed_mid_sweep_ends_it_in_one_line_with_every_run_ended(empty_store, tmp_path):
    """No PREFECT_API_URL: the command starts Prefect's temporary server itself; it is killed."""
    import signal
    import time

    import psutil

    process = _sweep(empty_store, tmp_path, FOUR_LONG, PREFECT_API_URL=None, PREFECT_HOME=str(seed_home(tmp_path / "prefect-home")))
    try:
        _until_running(process, empty_store, 2)
        marker = f"attnlab.flows.services.server_child {process.pid} "
        (server,) = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
        workers = [p for p in psutil.Process(process.pid).children(recursive=True) if p.pid != server.pid]
        server.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        _, err = process.communicate(timeout=600)  # a hang guard only
        seconds = time.monotonic() - killed
    finally:
        process.kill()
    print(f"ended {seconds:.1f} s after the kill; stderr:\n{err}")
    assert process.returncode == 2 and seconds < 30, err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and all(line.startswith(("sweep: ", "[", "running: ")) for line in lines[:-1]), err
    last = lines[-1]
    assert (
        last.startswith("attnlab: error: lost Prefect's API server (http://127.0.0.1:") and "run the same sweep again with --resume" in last
    )
    client = client_for(empty_store)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    (parent,) = [run for run in runs if run.data.tags.get("attnlab.sweep") == "parent"]
    children = [run for run in runs if run.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert parent.info.status == "FAILED" and f"sweep run {parent.info.run_id} ended FAILED" in last
    assert "RUNNING" not in [run.info.status for run in children]  # every run ended
    statuses = [run.info.status for run in children]
    told = ", ".join(f"{statuses.count(s)} {s}" for s in sorted(set(statuses)))
    assert f"of its 4 runs: {told}" in last  # the line is true to MLflow
    for line in lines[:-1]:  # and so is every run's line before it
        if line.startswith("["):
            name = line.split("] ", 1)[1].split(":", 1)[0]  # "dot seed 0"
            (run,) = [r for r in children if f"{r.data.tags['scorer']} seed {r.data.params['seed']}" == name]
            assert run.info.status == ("FAILED" if ": FAILED: " in line else "FINISHED"), (line, run.info.status)
    _, alive = psutil.wait_procs(workers, timeout=60)
    assert not [w for w in alive if w.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.slow
def test_a_worker_killed_mid_run_fails_only_its_run_and_the_others_finish(empty_store, tmp_path):
    """Three runs on two worker processes: one worker is killed (SIGKILL) while both train."""
    import json
    import os
    import signal

    from attnlab.ops.sweep_attempts import WORKER_LOST

    args = ["--task", "date", "--scorer", "dot,additive,general", "--max-parallel", "2", "--epochs", "15", "--train-size", "300",
            "--hidden-size", "16", "-o", "embedding_dim=8", "-o", "validation_size=30", "-o", "test_size=30",
            "-o", "target_exact_match=null", "-o", "explain_examples=0", "--json"]  # fmt: skip
    process = _sweep(empty_store, tmp_path, args)
    try:
        running = _until_running(process, empty_store, 2)
        (victim, (name, pid)), (healthy, _) = sorted(running.items())[:2]
        os.kill(pid, signal.SIGKILL)
        out, err = process.communicate(timeout=900)  # a hang guard only
    finally:
        process.kill()
    print(err)
    assert process.returncode == 1 and "Traceback" not in err, err
    summary = json.loads(out)
    assert summary["failed"] == 1 and len(summary["run_table"]) == 3
    client = client_for(empty_store)
    children = {run.info.run_id: run for run in client.search_runs(
        [client.get_run(victim).info.experiment_id], f"tags.mlflow.parentRunId = '{summary['parent_run_id']}'")}  # fmt: skip
    assert children[victim].info.status == "FAILED" and children[victim].data.tags["attnlab.error"] == WORKER_LOST
    assert children[healthy].info.status == "FINISHED" and children[healthy].data.metrics["epochs_trained"] == 15
    assert sorted(run.info.status for run in children.values()) == ["FAILED", "FINISHED", "FINISHED"]  # the third ran too
    lost_line = [line for line in err.splitlines() if ": FAILED: " in line]
    assert lost_line == [
        f"[{lost_line[0][1]}/3] {children[victim].data.tags['scorer']} seed 0: FAILED: {WORKER_LOST}; run {name} ended FAILED"
    ]


@pytest.mark.slow
def test_a_sweep_killed_with_sigkill_leaves_no_worker_and_its_runs_end_killed(empty_store, tmp_path):
    """kill -9 of the command, which can clean nothing up: its workers find it gone, end the runs
    they held KILLED and exit (they used to train on to the end of their runs, then wait for work
    forever)."""
    import signal

    import psutil

    long_runs = ["--task", "reverse", "--scorer", "dot,additive", "--max-parallel", "2", "--epochs", "500", "--train-size", "600",
                 "--hidden-size", "16", "-o", "embedding_dim=8", "-o", "validation_size=30", "-o", "test_size=30",
                 "-o", "target_exact_match=null"]  # fmt: skip
    process = _sweep(empty_store, tmp_path, long_runs)
    try:
        running = _until_running(process, empty_store, 2)
        workers = psutil.Process(process.pid).children(recursive=True)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        process.kill()
        process.stdout.close()  # the workers hold its ends until they exit
        process.stderr.close()
    _, alive = psutil.wait_procs(workers, timeout=300)  # a hang guard only: they exit within seconds
    assert not [w for w in alive if w.status() != psutil.STATUS_ZOMBIE], [w.cmdline()[-1][:80] for w in alive]
    client = client_for(empty_store)
    assert {run_id: client.get_run(run_id).info.status for run_id in running} == dict.fromkeys(running, "KILLED")
