"""What a sweep shows of its runs' outcomes, task by task: the finished runs each figure draws,
the runs on the parent's explorer page, and the names of those files.

An outcome is the sweep's dict of one run: ``{label, seed, task, status, summary | error}``
(``summary``: the train flow's, for a FINISHED run).
"""

from __future__ import annotations

from typing import Any

Outcome = dict[str, Any]


def result_tasks(results: list[Outcome]) -> list[str]:
    """The tasks of ``results``, in order of first appearance."""
    return list(dict.fromkeys(str(r["task"]) for r in results))


def finished_by_label(results: list[Outcome], labels: list[str], task: str) -> dict[str, list[dict[str, Any]]]:
    """Label -> the summaries of its finished runs of ``task``, for each of ``labels`` that has a
    run of ``task`` (an empty list when all of them failed); empty when no run finished: there
    is no figure of that task to draw."""
    finished = {
        label: [r["summary"] for r in results if r["label"] == label and r["task"] == task and r["status"] == "FINISHED"]
        for label in labels
        if any(r["label"] == label and r["task"] == task for r in results)
    }
    return finished if any(finished.values()) else {}


def task_file(stem: str, task: str, results: list[Outcome], suffix: str = ".png") -> str:
    """``<stem><suffix>``, or ``<stem>_<task><suffix>`` when the sweep ran several tasks."""
    return f"{stem}_{task}{suffix}" if len(result_tasks(results)) > 1 else f"{stem}{suffix}"


def explorer_runs(results: list[Outcome], task: str) -> list[tuple[str, list[dict[str, Any]], dict[str, float]]]:
    """(name ``<label> seed <seed>``, the run's explorer examples, its metrics) of each finished
    run of ``task`` that returned explorer examples (``compared``), in result order."""
    return [
        (f"{r['label']} seed {r['seed']}", r["summary"]["compared"], r["summary"]["metrics"])
        for r in results
        if r["task"] == task and r["status"] == "FINISHED" and r["summary"].get("compared")
    ]
