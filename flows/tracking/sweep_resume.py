"""Carry out :mod:`attnlab.ops.sweep_resume` in MLflow: a finished sweep run records its key and
summary; a resumed sweep finds the finished runs of its keys and reads their summaries back."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_task
from attnlab.ops.sweep_resume import RUN_KEY, SUMMARY_ARTIFACT, FinishedRun, reusable, run_key
from mlflow import MlflowClient


def job_keys(configs: list[ExperimentConfig]) -> list[str]:
    """The :func:`~attnlab.ops.sweep_resume.run_key` of each config (a task's data version is
    asked once per task and options)."""
    versions: dict[str, str | None] = {}
    keys = []
    for config in configs:
        task = json.dumps([config.task, config.task_options], sort_keys=True, default=str)
        if task not in versions:
            versions[task] = build_task(config).data_version()
        keys.append(run_key(config.model_dump(mode="json"), versions[task]))
    return keys


def record_finished(client: MlflowClient, run_id: str, key: str, summary: dict[str, Any]) -> None:
    """Keep ``summary`` with finished run ``run_id``, then tag it with its ``key`` (the tag comes
    last: a run found by its key always has its summary)."""
    client.log_text(run_id, json.dumps(summary, default=str, ensure_ascii=False), SUMMARY_ARTIFACT)
    client.set_tag(run_id, RUN_KEY, key)


def reused_outcomes(client: MlflowClient, experiment: str, jobs: list[tuple[str, ExperimentConfig, str]]) -> dict[int, dict[str, Any]]:
    """Index of a job ``(label, config, key)`` -> its outcome read back from the latest finished
    run of its key in ``experiment`` (``reused``: True), for every job that has one."""
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return {}
    runs = client.search_runs([found.experiment_id], f"attributes.status = 'FINISHED' and tags.`{RUN_KEY}` LIKE '%'", max_results=50000)
    finished = [FinishedRun(run.info.run_id, run.data.tags[RUN_KEY], run.info.end_time or 0) for run in runs]
    plan = reusable([key for _, _, key in jobs], finished)
    outcomes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for index, run_id in plan.items():
            label, config, _ = jobs[index]
            path = client.download_artifacts(run_id, SUMMARY_ARTIFACT, tmp)
            summary = json.loads(Path(path).read_text())
            outcomes[index] = {
                "label": label,
                "seed": config.seed,
                "task": config.task,
                "status": "FINISHED",
                "summary": summary,
                "reused": True,
            }
    return outcomes
