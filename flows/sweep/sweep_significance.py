"""A sweep's arms marked against its best arm (:mod:`attnlab.evaluation.arm_significance`): the
finished runs' per-source outcomes read from MLflow, the marks logged on the sweep's parent run
(``tables/significance.json``) and returned with their text, one table per task."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pandas as pd

from attnlab.evaluation.arm_significance import against_best, format_marks
from attnlab.flows.tracking.outcomes import run_outcomes
from mlflow import MlflowClient


def log_marks(
    client: MlflowClient, parent_run_id: str, results: list[dict[str, Any]], labels: list[str], comparison: dict[str, Any]
) -> None:
    """Add to the sweep's ``comparison`` its ``significance`` (task -> the marks of its arms; None
    for a sweep of one combination) and their text after its ``text``."""
    comparison["significance"], text = _marks(client, parent_run_id, results, labels)
    if text:
        comparison["text"] += "\n\n" + text


def _marks(client: MlflowClient, parent_run_id: str, results: list[dict[str, Any]], labels: list[str]) -> tuple[dict[str, Any] | None, str]:
    """(task -> the marks of its arms, their text), logged; (None, "") for a sweep of one combination."""
    if len(labels) < 2:
        return None, ""
    by_task: dict[str, dict[str, dict[int, pd.DataFrame]]] = defaultdict(lambda: {label: {} for label in labels})
    for result in results:
        arms = by_task[result["task"]]
        if result["status"] == "FINISHED":
            table = run_outcomes(client, result["summary"]["run_id"])
            if table is not None:
                arms[result["label"]][int(result["seed"])] = table
    marks, texts = {}, []
    for task, arms in by_task.items():
        present = {label: tables for label, tables in arms.items() if any(r["label"] == label and r["task"] == task for r in results)}
        if len(present) < 2:
            continue
        marks[task] = against_best(present)
        texts.append((f"task {task}: " if len(by_task) > 1 else "") + format_marks(marks[task]))
    if not marks:
        return None, ""
    client.log_dict(parent_run_id, marks, "tables/significance.json")
    return marks, "\n\n".join(texts)
