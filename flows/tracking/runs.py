"""What one attnlab run writes to MLflow: its experiment, params and tags, config files, per-epoch
metrics, test metrics and tables, artifact folders, and how it ends; who owns a run
(host, process, heartbeat) and ending the runs whose owner is gone; a lost tracking server.

Plain functions over an explicit ``run_id`` and :class:`~mlflow.MlflowClient`, never the fluent
"active run": MLflow's active run is per thread, so these work from any Prefect task runner.
Its data (splits and source files as datasets): :mod:`attnlab.flows.tracking.run_data`. Where
the store is: :mod:`attnlab.flows.tracking.store`; models and the registry:
:mod:`attnlab.flows.tracking.registry`.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow.entities import Metric, Param, Run, RunStatus, RunTag
from mlflow.exceptions import MlflowException

from attnlab.data.examples import sample_predictions
from attnlab.evaluation.significance import OUTCOME_COLUMNS, OUTCOMES_ARTIFACT
from attnlab.flows.tracking.mlflow_ui import experiment_tags
from attnlab.flows.tracking.store import Store, already_exists
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.run_records import (
    ENDED_BY_TAG,
    EPOCH_TAG,
    ERROR_TAG,
    MODEL_NAME_TAG,
)
from attnlab.ops import stale_runs
from attnlab.ops.threads import thread_params
from mlflow import MlflowClient

if TYPE_CHECKING:  # type-only: `attnlab runs --stale` lists and ends runs without torch
    from attnlab.evaluation.metrics import Evaluation

#: Per-epoch metrics from the training callback -> their MLflow names.
EPOCH_METRICS = {
    "train_loss": "train_loss",
    "val_loss": "val_loss",
    "val_exact_match": "val_exact_match",
    "seconds": "epoch_seconds",
    "samples_per_second": "samples_per_second",
    "train_seconds": "epoch_train_seconds",
    "learning_rate": "learning_rate",
}

#: The run's table of explanations (a row per explanation, a column per measure).
EXPLANATIONS_ARTIFACT = "tables/explanations.json"


def ensure_experiment(client: MlflowClient, name: str, store: Store) -> str:
    """The id of experiment ``name``, created (or restored) if needed. On the embedded store its
    artifacts go to ``<dir>/artifacts/<name>`` (else MLflow would use ``./mlruns``). It carries
    :func:`attnlab.flows.tracking.mlflow_ui.experiment_tags` (a model-training experiment with a saved runs
    view); an existing experiment gets those it lacks, and keeps those it has."""
    tags = experiment_tags()
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        root = store.artifact_root
        location = (root / name).as_uri() if root is not None else None
        try:
            return client.create_experiment(name, artifact_location=location, tags=tags)
        except MlflowException as exc:  # created concurrently by another run
            if not already_exists(exc):
                raise
            experiment = client.get_experiment_by_name(name)
            if experiment is None:  # created and deleted for good meanwhile: say what failed
                raise
    if experiment.lifecycle_stage == "deleted":
        client.restore_experiment(experiment.experiment_id)
    for key, value in tags.items():
        if key not in experiment.tags:
            client.set_experiment_tag(experiment.experiment_id, key, value)
    return experiment.experiment_id


def as_param(value: Any) -> str:
    """A value as an MLflow param string (dicts and lists as sorted JSON)."""
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)


def config_params(config: ExperimentConfig) -> dict[str, str]:
    """Every config field as an MLflow param string."""
    return {key: as_param(value) for key, value in config.model_dump(mode="json").items()}


def run_tags(config: ExperimentConfig) -> dict[str, str]:
    """Tags that make runs easy to find in the UI: the plugins and the registered model."""
    return {
        "task": config.task,
        "scorer": config.scorer,
        "encoder": config.encoder,
        "decoder": config.decoder,
        MODEL_NAME_TAG: config.registered_model(),
    }


def parent_owner_tags() -> dict[str, str]:
    """The owner tags of a sweep's or a tune's parent run: this host and process, no heartbeat
    (a parent logs no epochs). Its run is found stale once that process is gone."""
    return stale_runs.owner_tags(stale_runs.this_host(), os.getpid(), None)


def start_run(client: MlflowClient, experiment_id: str, config: ExperimentConfig, extra_tags: dict[str, str] | None = None) -> str:
    """Create a RUNNING run with the config as params, tags and config.yaml/config.json; its id.
    Tags name its owner (this host and process) and a first heartbeat (see
    :mod:`attnlab.ops.stale_runs`)."""
    name = f"{config.scorer}-{config.encoder}-{config.decoder}-seed{config.seed}"
    owner = stale_runs.owner_tags(stale_runs.this_host(), os.getpid(), time.time())
    tags = {**run_tags(config), **owner, **(extra_tags or {})}
    run_id = str(client.create_run(experiment_id, run_name=name, tags=tags).info.run_id)
    import torch  # loaded already: the run trains

    params = [Param(key, value) for key, value in {**config_params(config), **thread_params(torch.get_num_threads())}.items()]
    client.log_batch(run_id, params=params)
    import yaml  # lazy: only runs that start need it

    data = config.model_dump(mode="json")
    client.log_text(run_id, yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "config/config.yaml")
    client.log_dict(run_id, data, "config/config.json")
    return run_id


def log_epoch(client: MlflowClient, run_id: str, metrics: dict[str, float]) -> None:
    """One epoch's training and validation metrics, with step = epoch (MLflow draws the curves),
    the run's heartbeat and its latest epoch (tag :data:`EPOCH_TAG`, which a sweep's progress
    line reads from its one search), in one request."""
    step, now = int(metrics["epoch"]), int(time.time() * 1000)
    batch = [Metric(name, float(metrics[key]), now, step) for key, name in EPOCH_METRICS.items() if key in metrics]
    tags = [RunTag(stale_runs.HEARTBEAT, stale_runs.heartbeat(now / 1000)), RunTag(EPOCH_TAG, str(step))]
    client.log_batch(run_id, metrics=batch, tags=tags)


#: The alignment curve's metrics in MLflow (step = the run's optimisation step): point key -> name.
CURVE_METRICS = {
    "exact_match": "val_probe_exact_match",
    "alignment_accuracy": "val_probe_alignment_accuracy",
    "alignment_within_one": "val_probe_alignment_within_one",
}


def log_curve(client: MlflowClient, run_id: str, points: list[dict[str, float]]) -> None:
    """Points of the alignment curve (:class:`attnlab.viz.explorer_data.SnapshotRecorder`), with
    step = the optimisation step they were measured after (0: before training); NaN ones left
    out. One request."""
    now = int(time.time() * 1000)
    batch = [
        Metric(name, float(point[key]), now, int(point["step"]))
        for point in points
        for key, name in CURVE_METRICS.items()
        if math.isfinite(point.get(key, math.nan))
    ]
    if batch:
        client.log_batch(run_id, metrics=batch)


def evaluation_metrics(evaluation: Evaluation) -> dict[str, float]:
    """The evaluation's metrics named ``test_<name>``; NaN ones (e.g. alignment accuracy of a
    model without attention) are left out."""
    return {f"test_{k}": float(v) for k, v in evaluation.metrics.items() if not math.isnan(float(v))}


def log_evaluation(client: MlflowClient, run_id: str, evaluation: Evaluation, extra: dict[str, float]) -> None:
    """Test metrics, per-length accuracy (as metrics with step = shortest length of the bucket,
    so MLflow draws accuracy over length) and the tables per_length, predictions (a sample),
    test_outcomes (every test source's outcome, for paired tests), (for a model that attends,
    on a task with alignments) alignment_offsets and (when scored) explanations: a row per
    explanation, a column per measure."""
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in {**evaluation_metrics(evaluation), **extra}.items()]
    for row in evaluation.per_length.itertuples(index=False):
        metrics.append(Metric("test_exact_match_by_length", float(row.exact_match), now, int(row.min_length)))
        metrics.append(Metric("test_char_accuracy_by_length", float(row.char_accuracy), now, int(row.min_length)))
    client.log_batch(run_id, metrics=metrics)
    client.log_table(run_id, evaluation.per_length, "tables/per_length.json")
    client.log_table(run_id, sample_predictions(evaluation.predictions), "tables/predictions.json")
    client.log_table(run_id, evaluation.predictions[list(OUTCOME_COLUMNS)], OUTCOMES_ARTIFACT)  # every source: paired tests
    if evaluation.alignment_offsets is not None:
        client.log_table(run_id, evaluation.alignment_offsets, "tables/alignment_offsets.json")
    if evaluation.explanations is not None:
        client.log_table(run_id, evaluation.explanations.reset_index(), EXPLANATIONS_ARTIFACT)


def log_folder(client: MlflowClient, run_id: str, folder: Path, artifact_path: str) -> None:
    """Upload every file under ``folder`` to ``artifact_path`` of the run."""
    client.log_artifacts(run_id, str(folder), artifact_path)


def end_run(
    client: MlflowClient,
    run_id: str,
    status: str,
    error: str | None = None,
    checkpoint: Path | None = None,
) -> None:
    """End the run as FINISHED, FAILED or KILLED; record the error and, when given and present,
    the last checkpoint (``checkpoint/``). Always tries to set the status, whatever fails first."""
    assert status in {RunStatus.to_string(s) for s in (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.KILLED)}
    try:
        if error:
            client.set_tag(run_id, ERROR_TAG, error[:4000])
        if checkpoint is not None and checkpoint.exists():
            client.log_artifact(run_id, str(checkpoint), "checkpoint")
    finally:
        client.set_terminated(run_id, status)


def find_stale_runs(client: MlflowClient, experiment_ids: list[str] | None = None, now: float | None = None) -> list[tuple[Run, str]]:
    """The RUNNING runs of ``experiment_ids`` (default: every experiment of the store) whose owner
    is gone (:func:`attnlab.ops.stale_runs.stale_reason`), as (run, reason) pairs. One query for the
    runs of all the experiments (and one for the experiments when not given)."""
    now = time.time() if now is None else now
    if experiment_ids is None:
        experiment_ids = [e.experiment_id for e in client.search_experiments()]
    if not experiment_ids:
        return []
    host = stale_runs.this_host()
    found: list[tuple[Run, str]] = []
    for run in client.search_runs(experiment_ids, "attributes.status = 'RUNNING'", max_results=1000):
        why = stale_runs.stale_reason(run.data.tags, host, now)
        if why is not None:
            found.append((run, why))
    return found


def end_stale_runs(client: MlflowClient, now: float | None = None, experiment_ids: list[str] | None = None) -> list[tuple[str, str]]:
    """End FAILED every run of :func:`find_stale_runs` (by default the whole store's), with the
    reason in tags ``attnlab.error`` and ``attnlab.ended_by``; the (run id, reason) of each."""
    ended = []
    host = stale_runs.this_host()
    for run, why in find_stale_runs(client, experiment_ids, now):
        message = f"left RUNNING: {why}; ended FAILED by process {os.getpid()} on {host}"
        client.log_batch(run.info.run_id, tags=[RunTag(ENDED_BY_TAG, message), RunTag(ERROR_TAG, f"stale run: {why}")])
        client.set_terminated(run.info.run_id, "FAILED")
        ended.append((run.info.run_id, why))
    return ended
