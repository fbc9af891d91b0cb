"""What each of the processes of test_sweep_faults.py's concurrent-logging test runs, in a module
of its own: a forked process imports the module of the function it is given, and the test's
module would bring pytest and the test helpers into each of the 8 processes."""

from __future__ import annotations


def log_epochs(args: tuple[str, str, int]) -> str:
    """In a fresh process: one run with ``epochs`` epochs of metrics in the store at ``uri``
    (a tracking server) or ``folder`` (the embedded store)."""
    import os

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
