"""Carry out :mod:`attnlab.ops.resume_policy` in MLflow: find a stopped run's config and checkpoint,
then reopen the run (RUNNING again, owned by this process) so the train flow continues it."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from mlflow.entities import RunTag
from mlflow.exceptions import MlflowException

from attnlab.flows.steps import checkpoint_path
from attnlab.flows.tracking.runs import ENDED_BY, log_epoch
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.errors import UserError
from attnlab.ops import stale_runs
from attnlab.ops.resume_policy import StoppedRun, resume_refusal
from mlflow import MlflowClient

#: Where an ended run keeps its last checkpoint among its artifacts.
CHECKPOINT_ARTIFACT = "checkpoint/checkpoint.pt"


def resumable_run(client: MlflowClient, run_id: str) -> tuple[ExperimentConfig, str]:
    """The config and experiment name of run ``run_id``; UserError in one line when there is no
    such run or it cannot be resumed (see :func:`attnlab.ops.resume_policy.resume_refusal`)."""
    try:
        run = client.get_run(run_id)
    except MlflowException:
        raise UserError(f"--resume {run_id}: no such run in the tracking store") from None
    status = run.info.status
    stale = stale_runs.stale_reason(run.data.tags, stale_runs.this_host(), time.time()) if status == "RUNNING" else None
    artifact = any(f.path == CHECKPOINT_ARTIFACT for f in client.list_artifacts(run_id, "checkpoint"))
    refusal = resume_refusal(StoppedRun(run_id, status, stale, checkpoint_path(run_id).exists(), artifact))
    if refusal is not None:
        raise UserError(f"--resume: {refusal}")
    with tempfile.TemporaryDirectory() as tmp:
        config = ExperimentConfig.model_validate_json(Path(client.download_artifacts(run_id, "config/config.json", tmp)).read_text())
    return config, client.get_experiment(run.info.experiment_id).name


def reopen_run(client: MlflowClient, run_id: str, tags: dict[str, str]) -> str:
    """Make stopped run ``run_id`` RUNNING again, owned by this process, with ``tags`` (its new
    Prefect flow run) and its checkpoint at :func:`~attnlab.flows.steps.checkpoint_path` (copied
    from the run's artifacts when not on local disk), and the epochs it holds in the run's
    metrics; ``run_id``. Why it stopped is cleared."""
    local = checkpoint_path(run_id)
    if not local.exists():
        local.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copyfile(client.download_artifacts(run_id, CHECKPOINT_ARTIFACT, tmp), local)
    log_missing_epochs(client, run_id, local)
    owner = stale_runs.owner_tags(stale_runs.this_host(), os.getpid(), time.time())
    client.log_batch(run_id, tags=[RunTag(key, value) for key, value in {**owner, **tags}.items()])
    for key in (ENDED_BY, "attnlab.error"):
        if key in client.get_run(run_id).data.tags:
            client.delete_tag(run_id, key)
    client.update_run(run_id, "RUNNING")
    return run_id


def log_missing_epochs(client: MlflowClient, run_id: str, checkpoint: Path) -> None:
    """Log the epochs the checkpoint holds that the run's metrics lack: a process killed between
    saving an epoch's checkpoint and logging it loses that epoch's metrics, not the epoch."""
    from attnlab.model.bundle import load_weights

    logged = {metric.step for metric in client.get_metric_history(run_id, "train_loss")}
    for metrics in load_weights(checkpoint).get("history", []):
        if int(metrics["epoch"]) not in logged:
            log_epoch(client, run_id, metrics)
