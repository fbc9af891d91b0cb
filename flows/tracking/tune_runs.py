"""What ``attnlab tune`` writes to MLflow: the study's parent run (created once, reopened by a
resumed tune), its trials' child runs found by their tags, a pruned trial's ending, and the
parent's results (the trials table, Optuna's plots, the best config as ``best/config.yaml``)."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from mlflow.entities import Metric, Param, Run, RunTag
from mlflow.exceptions import MlflowException

from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking import store
from attnlab.flows.tracking.store import is_missing
from attnlab.lab.config import ExperimentConfig
from attnlab.tuning.space import Space
from mlflow import MlflowClient

#: Tags: the tune's parent run (``parent``), the study of a run, a trial run's number, and how a
#: pruned trial's run ended (``PRUNED``, with ``attnlab.pruned`` saying when and why).
PARENT_TAG = "attnlab.tune"
STUDY_TAG = "attnlab.tune.study"
TRIAL_TAG = "attnlab.tune.trial"
STATE_TAG = "attnlab.tune.state"
PRUNED_TAG = "attnlab.pruned"
#: Where the parent run keeps the best trial's config (a file ``attnlab train --config`` takes).
BEST_CONFIG = "best/config.yaml"


def end_pruned(client: MlflowClient, run_id: str, why: str) -> None:
    """End a trial's run that its pruner stopped: KILLED, tagged PRUNED with ``why``."""
    try:
        client.log_batch(run_id, tags=[RunTag(STATE_TAG, "PRUNED"), RunTag(PRUNED_TAG, why[:4000])])
    finally:
        client.set_terminated(run_id, "KILLED")


def parent_run(
    client: MlflowClient, experiment: str, study: str, base: ExperimentConfig, space: Space, known: str | None, flow_tags: dict[str, str]
) -> str:
    """The study's parent run: ``known`` (the id the study keeps) reopened RUNNING when it is
    still in the store, else a new one named after the arm and the study, with the base config
    and the space as params and ``flow_tags`` (the Prefect flow run's) among its tags."""
    if known is not None:
        try:
            client.update_run(known, status="RUNNING")
            client.log_batch(known, tags=[RunTag(key, value) for key, value in tracking.parent_owner_tags().items()])
            return known
        except MlflowException as exc:
            if not is_missing(exc):
                raise
    experiment_id = tracking.ensure_experiment(client, experiment, store.resolve_store())
    name = f"tune {base.scorer}/{base.encoder}/{base.decoder} on {base.task} {time.strftime('%m-%d %H:%M:%S')}"
    tags = {PARENT_TAG: "parent", STUDY_TAG: study, **tracking.run_tags(base), **flow_tags, **tracking.parent_owner_tags()}
    run_id = str(client.create_run(experiment_id, run_name=name, tags=tags).info.run_id)
    searched = space.as_dict()
    params = {**tracking.config_params(base), **{f"space.{k}": v for k, v in searched["space"].items()}}
    params.update(objective=space.objective, pruner=json.dumps(space.pruner), sampler_seed=str(space.sampler_seed), study=study)
    client.log_batch(run_id, params=[Param(key, str(value)[:6000]) for key, value in params.items()])
    return run_id


def trial_runs(client: MlflowClient, parent_run_id: str, status: str | None = None) -> dict[int, Run]:
    """Trial number -> its latest child run of ``parent_run_id`` (with ``status`` when given)."""
    experiment = client.get_run(parent_run_id).info.experiment_id
    where = f"tags.mlflow.parentRunId = '{parent_run_id}'" + (f" and attributes.status = '{status}'" if status else "")
    found: dict[int, Run] = {}
    for run in client.search_runs([experiment], where, max_results=5000, order_by=["attributes.start_time ASC"]):
        number = run.data.tags.get(TRIAL_TAG)
        if number is not None and number.isdigit():
            found[int(number)] = run
    return found


def end_running_trials(client: MlflowClient, parent_run_id: str, status: str, why: str, numbers: set[int] | None = None) -> None:
    """End the RUNNING runs of the study's trials (of ``numbers`` when given) with ``status``."""
    for number, run in trial_runs(client, parent_run_id, "RUNNING").items():
        if numbers is None or number in numbers:
            tracking.end_run(client, run.info.run_id, status, error=why)


def log_results(client: MlflowClient, parent_run_id: str, rows: list[dict[str, Any]], best_config: str | None,
                figures: dict[str, Any], metrics: dict[str, float]) -> list[str]:  # fmt: skip
    """The trials table (``tables/trials.json``), the figures (``plots/<name>.png``), the best
    config (:data:`BEST_CONFIG`) and ``metrics`` on the parent run; the artifact paths written."""
    from attnlab.viz.heatmaps import save_figure

    client.log_table(parent_run_id, pd.DataFrame(rows), "tables/trials.json")
    written = ["tables/trials.json"]
    with tempfile.TemporaryDirectory(prefix="attnlab-tune-") as folder:
        for name, figure in figures.items():
            save_figure(figure, Path(folder) / f"{name}.png")
            written.append(f"plots/{name}.png")
        if figures:
            tracking.log_folder(client, parent_run_id, Path(folder), "plots")
    if best_config is not None:
        client.log_text(parent_run_id, best_config, BEST_CONFIG)
        written.append(BEST_CONFIG)
    now = int(time.time() * 1000)
    client.log_batch(parent_run_id, metrics=[Metric(key, float(value), now, 0) for key, value in metrics.items()])
    return written
