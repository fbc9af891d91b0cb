"""A sweep on a real Dask cluster: a scheduler and two workers started by the test as separate
processes, each worker in a folder and HOME of its own, a real MLflow server, the session's Prefect
server. The embedded store is refused before anything starts; a worker killed with SIGKILL
mid-run leaves no run RUNNING, its rerun linked to it, and one result per combination and seed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from _flowkit import assert_one_line_error, mlflow_server_command

from attnlab.flows.services.servers import Server, mlflow_server_env, stop_group, wait_healthy

BIN = Path(sys.executable).parent
SWEEP = ["sweep", "--task", "date", "--scorer", "dot,additive", "--epochs", "30", "--train-size", "100",
         "--hidden-size", "16", "-o", "embedding_dim=8", "-o", "validation_size=10", "-o", "test_size=10",
         "-o", "target_exact_match=null", "-o", "explain_examples=0", "--max-parallel", "2", "--runner", "dask", "--json"]  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, prefect_harness):
    """The MLflow server, the Dask scheduler and two workers; what a client needs to reach them."""
    from distributed import Client
    from prefect.settings import get_current_settings

    root = tmp_path_factory.mktemp("cluster")
    mlflow_port, scheduler_port = free_port(), free_port()
    mlflow_url, address = f"http://127.0.0.1:{mlflow_port}", f"tcp://127.0.0.1:{scheduler_port}"
    prefect_api = str(get_current_settings().api.url)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_TRACKING", "ATTNLAB_"))}
    mlflow_server = Server(
        "MLflow", mlflow_server_command(mlflow_port, root), f"{mlflow_url}/health", root / "mlflow.log", mlflow_server_env()
    )
    processes = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(scheduler_port), "--no-dashboard"],
                                  cwd=root, env=base, stdout=open(root / "scheduler.log", "ab"), stderr=subprocess.STDOUT,
                                  start_new_session=True)]  # fmt: skip
    workers = []
    for name in ("w1", "w2"):
        folder = root / name
        (folder / "home").mkdir(parents=True)
        env = {**base, "HOME": str(folder / "home"), "PREFECT_API_URL": prefect_api, "MLFLOW_TRACKING_URI": mlflow_url}
        log = open(root / f"{name}.log", "ab")
        workers.append(subprocess.Popen(
            [str(BIN / "dask"), "worker", address, "--name", name, "--nthreads", "1", "--no-nanny", "--no-dashboard",
             "--local-directory", str(folder / "dask")], cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        ))  # fmt: skip
    processes += workers
    mlflow_server.start()
    try:
        wait_healthy([mlflow_server], timeout=600)
        with Client(address, timeout=600) as client:
            client.wait_for_workers(2, timeout=600)
        yield SimpleNamespace(root=root, address=address, mlflow_url=mlflow_url, prefect_api=prefect_api, base=base,
                              workers=workers, folders=[root / "w1", root / "w2"])  # fmt: skip
    finally:
        for process in processes:
            stop_group(process, grace=10)
        mlflow_server.stop()


def client_env(cluster, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The submitting machine's environment: a HOME and PREFECT_HOME of its own."""
    home = tmp_path / "client-home"
    home.mkdir(exist_ok=True)
    return {**cluster.base, "HOME": str(home), "PREFECT_HOME": str(home / ".prefect"), **extra}


def sweep(cluster, env: dict[str, str], cwd: Path) -> subprocess.Popen:
    """The sweep in a process of its own, its output in files of ``cwd`` (out.txt, err.txt)."""
    with open(cwd / "out.txt", "w") as out, open(cwd / "err.txt", "w") as err:
        return subprocess.Popen([str(BIN / "attnlab"), *SWEEP, "--dask-address", cluster.address], env=env, cwd=cwd,
                                stdout=out, stderr=err)  # fmt: skip


@pytest.mark.slow
def test_the_embedded_store_and_a_temporary_prefect_server_are_refused_on_a_cluster(cluster, tmp_path):
    done = subprocess.run([str(BIN / "attnlab"), *SWEEP, "--dask-address", cluster.address], capture_output=True, text=True,
                          env=client_env(cluster, tmp_path, PREFECT_API_URL=cluster.prefect_api), cwd=tmp_path, timeout=600)  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert_one_line_error(done.stderr, f"--dask-address {cluster.address}: the embedded MLflow store {tmp_path / 'mlflow'} is on this machine",
                          "export MLFLOW_TRACKING_URI=http://HOST:PORT")  # fmt: skip
    assert not (tmp_path / "mlflow" / "mlflow.db").exists()  # refused before anything started

    env = client_env(cluster, tmp_path, MLFLOW_TRACKING_URI=cluster.mlflow_url)  # no PREFECT_API_URL
    done = subprocess.run([str(BIN / "attnlab"), *SWEEP, "--dask-address", cluster.address], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)  # fmt: skip
    assert done.returncode == 2
    assert_one_line_error(done.stderr, "no Prefect server is configured (PREFECT_API_URL)", "export PREFECT_API_URL")


@pytest.mark.slow
def test_a_worker_killed_mid_run_leaves_no_run_running_and_its_rerun_linked(cluster, tmp_path):
    from prefect.client.orchestration import get_client

    from attnlab.ops.stale_runs import PID
    from attnlab.ops.sweep_attempts import RERUN_OF
    from mlflow import MlflowClient

    env = client_env(cluster, tmp_path, MLFLOW_TRACKING_URI=cluster.mlflow_url, PREFECT_API_URL=cluster.prefect_api)
    client = MlflowClient(cluster.mlflow_url)
    process = sweep(cluster, env, tmp_path)
    try:
        victim = None
        while victim is None:  # the event: a child run has logged an epoch on a worker
            assert process.poll() is None, (tmp_path / "err.txt").read_text()[-3000:]
            experiment = client.get_experiment_by_name("attnlab-date")
            running = (
                client.search_runs([experiment.experiment_id], "attributes.status = 'RUNNING' and metrics.val_exact_match >= 0")
                if experiment
                else []
            )
            victim = next((run for run in running if "mlflow.parentRunId" in run.data.tags), None)
            time.sleep(0.5)
        os.kill(int(victim.data.tags[PID]), signal.SIGKILL)
        process.wait(timeout=900)  # a hang guard only
    finally:
        process.kill()
    assert process.returncode == 0, (tmp_path / "err.txt").read_text()[-3000:]
    summary = json.loads((tmp_path / "out.txt").read_text())
    children = {run.info.run_id: run for run in client.search_runs(
        [victim.info.experiment_id], f"tags.mlflow.parentRunId = '{summary['parent_run_id']}'")}  # fmt: skip
    lost = children[victim.info.run_id]
    assert lost.info.status == "FAILED" and "its worker was lost; rerun as" in lost.data.tags["attnlab.error"]
    (rerun,) = [run for run in children.values() if run.data.tags.get(RERUN_OF) == lost.info.run_id]
    assert rerun.info.status == "FINISHED" and rerun.data.tags["scorer"] == lost.data.tags["scorer"]
    assert sorted(run.info.status for run in children.values()) == ["FAILED", "FINISHED", "FINISHED"]
    assert len(summary["run_table"]) == 2 and summary["failed"] == 0  # one result per combination and seed
    with get_client(sync_client=True) as prefect:
        assert prefect.read_flow_run(lost.data.tags["prefect.flow_run_id"]).state.type.value == "CRASHED"
    # Nothing landed beside the workers or under the submitting machine's Prefect home.
    assert not any((folder / "mlflow").exists() for folder in cluster.folders)
    assert not list((tmp_path / "client-home" / ".prefect").rglob("storage/*"))
