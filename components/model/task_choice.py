"""The task plugin a config names, built without importing torch (a mistake in a prediction's
input is refused before the model and its libraries load)."""

from __future__ import annotations

from attnlab.lab.config import ExperimentConfig
from attnlab.plugins import Task, create_plugin


def build_task(config: ExperimentConfig, split: str = "train") -> Task:
    """The task plugin named in ``config`` with its options; for ``split="test"`` the options
    are updated with ``config.test_task_options``."""
    options = dict(config.task_options)
    if split == "test":
        options.update(config.test_task_options)
    task: Task = create_plugin("tasks", config.task, **options)
    return task


def build_tasks(config: ExperimentConfig) -> tuple[Task, Task | None]:
    """The config's task and its test task: the task with ``config.test_task_options``, or None
    when there are none (the test split then comes from the task itself)."""
    return build_task(config), build_task(config, split="test") if config.test_task_options else None
