"""What the processes of the tests of many writers at once run (test_sweep_faults.py's eight
processes logging, test_store_integrity.py's eight runs on a fresh store), in a module of its own:
a forked process imports the module of the function it is given, and a test's module would bring
pytest, the test helpers and what the test itself imports into each of the 8 processes."""

from __future__ import annotations

import os
import time
from pathlib import Path


def log_epochs(args: tuple[str, str, int]) -> str:
    """In a fresh process: one run with ``epochs`` epochs of metrics in the store at ``uri``
    (a tracking server) or ``folder`` (the embedded store)."""
    where, name, epochs = args
    if where.startswith("http"):
        os.environ["MLFLOW_TRACKING_URI"] = where
    else:
        os.environ["ATTNLAB_MLFLOW_DIR"] = where
        os.environ.pop("MLFLOW_TRACKING_URI", None)
    from attnlab.flows.tracking import runs as tracking
    from attnlab.flows.tracking import store as tracking_store
    from attnlab.lab.config import ExperimentConfig
    from mlflow import MlflowClient

    store = tracking_store.use_store()
    client = MlflowClient()
    run_id = tracking.start_run(client, tracking.ensure_experiment(client, "concurrent", store), ExperimentConfig(seed=int(name)))
    for epoch in range(1, epochs + 1):
        tracking.log_epoch(client, run_id, {"epoch": epoch, "train_loss": 1 / epoch, "val_loss": 2 / epoch,
                                            "val_exact_match": epoch / epochs, "seconds": 0.1, "train_seconds": 0.1,
                                            "samples_per_second": 1000.0 + epoch})  # fmt: skip
    tracking.end_run(client, run_id, "FINISHED")
    return run_id


def use_the_store(store_dir: str, go: str, seed: int, ready: str, out: str) -> None:
    """In a process of its own (see :func:`store_user`): wait for the go file, then open the store
    and log one run the way ``attnlab train`` does (store check, stale-run sweep, experiment, run,
    end); what it says goes to the file ``out``."""
    log = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.environ["ATTNLAB_MLFLOW_DIR"] = store_dir
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    from attnlab.flows.tracking import runs as tracking
    from attnlab.flows.tracking import store
    from attnlab.lab.config import ExperimentConfig
    from mlflow import MlflowClient

    Path(ready).touch()
    while not Path(go).exists():
        time.sleep(0.05)
    where = store.use_store()
    store.check_store(where)
    client = MlflowClient()
    tracking.end_stale_runs(client)
    run_id = tracking.start_run(client, tracking.ensure_experiment(client, "attnlab-date", where), ExperimentConfig(seed=seed))
    client.log_metric(run_id, "test_exact_match", 0.5)
    tracking.end_run(client, run_id, "FINISHED")
