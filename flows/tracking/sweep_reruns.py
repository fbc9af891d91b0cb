"""Carry out :func:`attnlab.ops.sweep_attempts.settle` on a sweep's child runs in MLflow (and their
Prefect flow runs): runs left RUNNING by a lost worker end FAILED, reruns are linked; and end the
run of a worker lost mid-sweep at once (:func:`end_lost_worker_run`)."""

from __future__ import annotations

import logging
from uuid import UUID

from mlflow.entities import Run, RunTag

from attnlab.lab.run_records import ENDED_BY_TAG, ERROR_TAG
from attnlab.ops.sweep_attempts import WORKER_LOST, ChildRun, Settlement, held_by_lost_worker, settle
from mlflow import MlflowClient

log = logging.getLogger("attnlab.sweep")


def child_runs(client: MlflowClient, parent_run_id: str, status: str | None = None) -> list[Run]:
    """The sweep's child runs, those with ``status`` when given (children share the parent's
    experiment)."""
    experiment_id = client.get_run(parent_run_id).info.experiment_id
    query = f"tags.mlflow.parentRunId = '{parent_run_id}'" + (f" and attributes.status = '{status}'" if status else "")
    return client.search_runs([experiment_id], query, max_results=10000)


def combination(run: Run) -> tuple[str | None, ...]:
    """The combination and seed a child run trained."""
    tags = run.data.tags
    return (tags.get("task"), tags.get("scorer"), tags.get("encoder"), tags.get("decoder"), run.data.params.get("seed"))


def settle_children(client: MlflowClient, parent_run_id: str) -> Settlement:
    """End and link the sweep's child runs as :func:`~attnlab.ops.sweep_attempts.settle` says; what was done."""
    runs = {run.info.run_id: run for run in child_runs(client, parent_run_id)}
    plan = settle([ChildRun(r.info.run_id, combination(r), r.info.status, r.info.start_time) for r in runs.values()])
    for run_id, tags in plan.tags.items():
        client.log_batch(run_id, tags=[RunTag(key, value) for key, value in tags.items()])
    for run_id, why in plan.end.items():
        end_child(client, parent_run_id, runs[run_id], "FAILED", why)
        log.info("%s: ended FAILED: %s", runs[run_id].info.run_name, why)
    return plan


def end_lost_worker_run(client: MlflowClient, parent_run_id: str, key: tuple[object, ...]) -> list[str]:
    """End FAILED the run a worker that died held (:func:`~attnlab.ops.sweep_attempts.held_by_lost_worker`:
    its combination and seed ``key`` as :func:`combination` names it); the names of the runs ended."""
    runs = {run.info.run_id: run for run in child_runs(client, parent_run_id, "RUNNING")}
    held = held_by_lost_worker([ChildRun(r.info.run_id, combination(r), r.info.status, r.info.start_time) for r in runs.values()], key)
    for run_id in held:
        end_child(client, parent_run_id, runs[run_id], "FAILED", WORKER_LOST)
    return [runs[run_id].info.run_name for run_id in held]


def end_child(client: MlflowClient, parent_run_id: str, run: Run, status: str, why: str, prefect: bool = True) -> None:
    """End child run ``run`` of the sweep with ``status``, saying ``why`` (tags ``attnlab.error``
    and ``attnlab.ended_by``), and its Prefect flow run Crashed unless ``prefect`` is False (the
    server is gone)."""
    client.log_batch(run.info.run_id, tags=[RunTag(ENDED_BY_TAG, f"sweep {parent_run_id}: {why}"), RunTag(ERROR_TAG, why)])
    client.set_terminated(run.info.run_id, status)
    if prefect:
        crash_flow_run(run.data.tags.get("prefect.flow_run_id"), why)


def crash_flow_run(flow_run_id: str | None, why: str) -> None:
    """Mark the Prefect flow run of a lost attempt Crashed (it would stay Running forever)."""
    if not flow_run_id:
        return
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    try:
        with get_client(sync_client=True) as prefect:
            state = prefect.read_flow_run(UUID(flow_run_id)).state
            if state is None or not state.is_final():
                prefect.set_flow_run_state(flow_run_id, Crashed(message=why), force=True)
    except Exception as exc:  # noqa: BLE001  the MLflow record is what matters; say why not
        log.warning("could not mark Prefect flow run %s Crashed: %s", flow_run_id, exc)
