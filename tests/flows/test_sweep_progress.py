"""The sweep's progress line: where each running run is, read with one query however many run."""

from __future__ import annotations

from _flowkit import client_for
from mlflow.entities import Param

from attnlab.flows.sweep.sweep_jobs import _running_line
from attnlab.flows.tracking import runs as tracking


class CountingClient:
    """An MlflowClient that counts the calls made through it."""

    def __init__(self, client) -> None:
        self.client, self.calls = client, []

    def __getattr__(self, name):
        method = getattr(self.client, name)

        def counted(*args, **kwargs):
            self.calls.append(name)
            return method(*args, **kwargs)

        return counted


def test_the_progress_line_reads_every_running_run_in_one_search(empty_store):
    client = client_for(empty_store)
    experiment_id = client.create_experiment("sweeps")
    parent = client.create_run(experiment_id, run_name="sweep").info.run_id
    children = {}
    for name in ("dot-seed0", "additive-seed0", "general-seed0"):
        run_id = client.create_run(experiment_id, run_name=name, tags={"mlflow.parentRunId": parent}).info.run_id
        client.log_batch(run_id, params=[Param("epochs", "6")])
        children[name] = run_id
    for epoch, score in ((1, 0.25), (2, 0.5)):
        tracking.log_epoch(client, children["dot-seed0"], {"epoch": epoch, "train_loss": 1.0, "val_exact_match": score})
    tracking.log_epoch(client, children["additive-seed0"], {"epoch": 1, "train_loss": 1.0, "val_exact_match": 0.125})
    client.set_terminated(children["general-seed0"], "FINISHED")  # not running: not listed

    counting = CountingClient(client)
    line = _running_line(counting, parent)
    assert line == "running: additive-seed0: epoch 1/6 val_exact_match 0.125; dot-seed0: epoch 2/6 val_exact_match 0.500"
    assert counting.calls.count("search_runs") == 1 and "get_metric_history" not in counting.calls

    fresh = client.create_run(experiment_id, run_name="multihead-seed0", tags={"mlflow.parentRunId": parent}).info.run_id
    assert "multihead-seed0: starting" in _running_line(client, parent)
    client.set_terminated(fresh, "FINISHED")
    for run_id in children.values():
        client.set_terminated(run_id, "FINISHED")
    assert _running_line(client, parent) is None
