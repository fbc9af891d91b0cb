"""What a trained model may be asked: raw inputs checked against its task, without torch.

A model of a config answers sources of its task (``task_options``) and, with
``test_task_options``, of its test task too. Each task says why a text is not one of its sources
(:meth:`attnlab.plugins.Task.check_source`); these functions name the first input refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnlab.plugins import Task, create_plugin
from attnlab.plugins.task import shown


def config_tasks(config: Mapping[str, Any]) -> tuple[Task, Task | None]:
    """The (task, test task or None) of a config given as a mapping (``ExperimentConfig`` fields,
    e.g. a bundle's ``config.json``): the test task exists when ``test_task_options`` is set."""
    options = dict(config.get("task_options") or {})
    task = create_plugin("tasks", config.get("task", "date"), **options)
    test_options = config.get("test_task_options") or {}
    test_task = create_plugin("tasks", config.get("task", "date"), **{**options, **test_options}) if test_options else None
    return task, test_task


def source_problem(text: str, task: Task, test_task: Task | None = None) -> str | None:
    """Why ``text`` is not a source of ``task`` (its :meth:`~attnlab.plugins.Task.check_source`
    reason, naming the text), or None; with ``test_task``, a source of either one is accepted."""
    reason = task.check_source(text)
    if reason is not None and test_task is not None and test_task.check_source(text) is None:
        return None
    return None if reason is None else f"{shown(text)} {reason}"


def first_problem(texts: list[str], task: Task, test_task: Task | None = None) -> str | None:
    """The problem of the first refused input of ``texts`` (see :func:`source_problem`), or None."""
    if not texts:
        return "no input given; pass at least one source string"
    for text in texts:
        problem = source_problem(text, task, test_task)
        if problem is not None:
            return problem
    return None
