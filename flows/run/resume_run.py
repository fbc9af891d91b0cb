"""Carry out :mod:`attnlab.ops.resume_policy` in MLflow: hold the run's resume lock, find the
stopped run's config and checkpoint, then reopen the run (RUNNING again, owned by this process)
so the train flow continues it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from mlflow.entities import RunTag
from mlflow.exceptions import MlflowException

from attnlab.data.cache import cache_root
from attnlab.flows.run.steps import checkpoint_path
from attnlab.flows.tracking import store
from attnlab.flows.tracking.runs import log_epoch
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.errors import UserError
from attnlab.lab.run_records import ENDED_BY_TAG, ERROR_TAG
from attnlab.model.bundle import RefusedFile
from attnlab.ops import stale_runs
from attnlab.ops.resume_policy import StoppedRun, busy_refusal, damaged_checkpoint, resume_refusal
from mlflow import MlflowClient

#: Where an ended run keeps its last checkpoint among its artifacts.
CHECKPOINT_ARTIFACT = "checkpoint/checkpoint.pt"


@contextlib.contextmanager
def resume_lock(run_id: str) -> Iterator[None]:
    """Hold the resume lock of run ``run_id`` while the block runs; UserError in one line
    (:func:`attnlab.ops.resume_policy.busy_refusal`) when another process holds it. A file lock
    beside the embedded store (in the cache folder for a tracking server): the kernel releases it
    when its holder exits, however it ends (SIGKILL included), so a dead holder never blocks a
    resume; its owner tags, in a file beside it, name the holder in the refusal."""
    from filelock import FileLock, Timeout

    if not re.fullmatch(r"[0-9A-Za-z_-]{1,64}", run_id):
        raise UserError(f"--resume {run_id!r}: not a run id (the 32 hex digits 'attnlab runs' shows)")
    where = store.resolve_store()
    folder = (where.folder if where.folder is not None else cache_root()) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    owner = folder / f"attnlab-resume-{run_id}.owner"
    lock = FileLock(folder / f"attnlab-resume-{run_id}.lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        try:
            holder = json.loads(owner.read_text())
        except (OSError, ValueError):
            holder = {}  # its holder has not written it yet
        raise UserError(f"--resume: {busy_refusal(run_id, holder, time.time())}") from None
    try:
        owner.write_text(json.dumps(stale_runs.owner_tags(stale_runs.this_host(), os.getpid(), time.time())))
        yield
    finally:
        owner.unlink(missing_ok=True)
        lock.release()


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
    local = checkpoint_path(run_id)
    refusal = resume_refusal(StoppedRun(run_id, status, stale, local.exists(), artifact))
    if refusal is not None:
        raise UserError(f"--resume: {refusal}")
    if local.exists():
        loadable_checkpoint(run_id, local)
    with tempfile.TemporaryDirectory() as tmp:
        config = ExperimentConfig.model_validate_json(Path(client.download_artifacts(run_id, "config/config.json", tmp)).read_text())
    return config, client.get_experiment(run.info.experiment_id).name


def reopen_run(client: MlflowClient, run_id: str, tags: dict[str, str]) -> str:
    """Make stopped run ``run_id`` RUNNING again, owned by this process, with ``tags`` (its new
    Prefect flow run) and its checkpoint at :func:`~attnlab.flows.run.steps.checkpoint_path` (copied
    from the run's artifacts when not on local disk), and the epochs it holds in the run's
    metrics; ``run_id``. Why it stopped is cleared."""
    local = checkpoint_path(run_id)
    if not local.exists():
        local.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copyfile(client.download_artifacts(run_id, CHECKPOINT_ARTIFACT, tmp), local)
    try:
        log_missing_epochs(client, run_id, local)
    except RefusedFile as exc:  # the checkpoint artifact just downloaded (a local one was checked before)
        raise UserError(f"--resume: {damaged_checkpoint(run_id, str(exc))}") from None
    owner = stale_runs.owner_tags(stale_runs.this_host(), os.getpid(), time.time())
    client.log_batch(run_id, tags=[RunTag(key, value) for key, value in {**owner, **tags}.items()])
    for key in (ENDED_BY_TAG, ERROR_TAG):
        if key in client.get_run(run_id).data.tags:
            client.delete_tag(run_id, key)
    client.update_run(run_id, "RUNNING")
    return run_id


def loadable_checkpoint(run_id: str, checkpoint: Path) -> Path:
    """``checkpoint``, once it loads; UserError in one line saying the choices left when it does
    not (cut short, not a checkpoint: :func:`attnlab.ops.resume_policy.damaged_checkpoint`)."""
    from attnlab.model.bundle import load_weights

    try:
        load_weights(checkpoint)
    except RefusedFile as exc:
        raise UserError(f"--resume: {damaged_checkpoint(run_id, str(exc))}") from None
    return checkpoint


def log_missing_epochs(client: MlflowClient, run_id: str, checkpoint: Path) -> None:
    """Log the epochs the checkpoint holds that the run's metrics lack: a process killed between
    saving an epoch's checkpoint and logging it loses that epoch's metrics, not the epoch."""
    from attnlab.model.bundle import load_weights

    logged = {metric.step for metric in client.get_metric_history(run_id, "train_loss")}
    for metrics in load_weights(checkpoint).get("history", []):
        if int(metrics["epoch"]) not in logged:
            log_epoch(client, run_id, metrics)
