"""A scheduled retrain's own MLflow run (``retrain-<task>``): opened with its owner's tags (so a
tick whose process died is found stale like any other run), what earlier models of the same
registered model were trained on, a skipped tick recorded as such, and the end of a failed one.

The decision whether to train is :func:`attnlab.ops.data_change.unchanged_reason`; this module
only reads and writes MLflow.
"""

from __future__ import annotations

import contextlib
import os
import time

from attnlab.flows.tracking import promote as promotion
from attnlab.flows.tracking import registry, store
from attnlab.flows.tracking import runs as tracking
from attnlab.lab.run_records import DATA_VERSION_TAG, KIND_TAG, MODEL_NAME_TAG, RETRAIN_SKIPPED_TAG
from attnlab.ops import stale_runs
from attnlab.ops.data_change import TrainedOn
from mlflow import MlflowClient

#: On a retrain run that did not train, why (the data is one a model was already trained on).
#: MLflow's run description (shown at the top of the run's page and in its table's tooltip).
DESCRIPTION_TAG = "mlflow.note.content"


def start_retrain_run(task_name: str, name: str, experiment: str, tags: dict[str, str]) -> str:
    """Check the store and open the RUNNING retrain run (``retrain-<task>``) of registered model
    ``name``, owned by this process (host, pid, heartbeat); its id."""
    where = store.use_store()
    store.check_store(where)
    client = MlflowClient()
    experiment_id = tracking.ensure_experiment(client, experiment, where)
    owner = stale_runs.owner_tags(stale_runs.this_host(), os.getpid(), time.time())
    tags = {KIND_TAG: "retrain", "task": task_name, MODEL_NAME_TAG: name, **owner, **tags}
    return str(client.create_run(experiment_id, run_name=f"retrain-{task_name}", tags=tags).info.run_id)


def trained_before(client: MlflowClient, name: str) -> list[TrainedOn]:
    """What the champion of registered model ``name`` and its last completed retrain (FINISHED,
    promoted or not, not skipped) were trained on, in that order; either left out when there is
    none."""
    earlier = []
    champion = registry.champion_version(client, name)
    if champion is not None:
        # a version registered from files rather than from a run has no run to ask
        data = client.get_run(champion.run_id).data.tags.get(DATA_VERSION_TAG) if champion.run_id else None
        earlier.append(TrainedOn(data, f"the champion (version {champion.version})"))
    experiments = [e.experiment_id for e in client.search_experiments()]
    query = f"tags.`{KIND_TAG}` = 'retrain' and tags.`{MODEL_NAME_TAG}` = '{name}' and attributes.status = 'FINISHED'"
    for run in client.search_runs(experiments, query, max_results=50, order_by=["attributes.start_time DESC"]):
        tags = run.data.tags
        if RETRAIN_SKIPPED_TAG not in tags and DATA_VERSION_TAG in tags:
            outcome = "promoted" if tags.get("promotion.promoted") == "true" else "not promoted"
            earlier.append(TrainedOn(tags[DATA_VERSION_TAG], f"the last retrain (run {run.info.run_id[:8]}, {outcome})"))
            break
    return earlier


def record_data(run_id: str, data: str | None) -> None:
    """The data digest a retrain trains on, on its run (what the next tick compares)."""
    if data is not None:
        MlflowClient().set_tag(run_id, DATA_VERSION_TAG, data)


def end_skipped(run_id: str, reason: str) -> None:
    """End a retrain run that did not train FINISHED, ``reason`` as its tag and description."""
    client = MlflowClient()
    client.set_tag(run_id, RETRAIN_SKIPPED_TAG, reason)
    client.set_tag(run_id, DESCRIPTION_TAG, f"skipped: {reason}")
    tracking.end_run(client, run_id, "FINISHED")


def end_failed(error: str, status: str, name: str, undecided: str | None, run_id: str) -> None:
    """End the retrain run FAILED or KILLED (``status``) with ``error`` as its tag and
    description; record the failure on the ``undecided`` version (registered, no decision yet)
    when there is one. Best effort: the store may be what failed."""
    client = MlflowClient()
    with contextlib.suppress(Exception):
        if undecided is not None:
            promotion.record_failure(client, name, undecided, run_id, error)
    with contextlib.suppress(Exception):
        client.set_tag(run_id, DESCRIPTION_TAG, f"failed: {error}")
    with contextlib.suppress(Exception):
        tracking.end_run(client, run_id, status, error=error)
