"""What a trained model keeps of its task, so that loading it never reads training data.

A bundle's ``task.json`` holds, for the task and (with ``test_task_options``) its test task, the
tokens of each side, how each side is cut, the longest source and a few examples. A model of a
task that reads data (a file, a dictionary: :meth:`~attnlab.plugins.Task.data_version` is not None)
is loaded with :class:`SavedTask` built from it, so the model predicts on a machine without the
file; it accepts sources up to :data:`SOURCE_SLACK` times its longest training source. A
generated task (dates) is built from its options as before: its own checks (real dates) apply.
Bundles written before ``task.json`` existed load as they always did.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from attnlab.lab.config import ExperimentConfig
from attnlab.plugins import Example, Task
from attnlab.plugins.tokens import alphabet_tokens

TASK_FILE = "task.json"
#: A model of a task that reads data accepts sources up to this many times the longest source it
#: was trained and tested on (a name one letter longer than any in the file is no reason to refuse).
SOURCE_SLACK = 1.5
#: Examples kept with the model (the loaded task's :meth:`SavedTask.sample` draws from them).
KEPT_EXAMPLES = 20


class SavedTask(Task):
    """A task as a model saved it: each side's tokens and tokenization, the longest source it
    accepts and a few examples. :meth:`check_source` is :class:`~attnlab.plugins.Task`'s
    (empty, too long, unknown tokens)."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.source_tokenization = state["source_tokenization"]
        self.target_tokenization = state["target_tokenization"]
        self.source_alphabet = _alphabet(state["source_tokens"], self.source_tokenization)
        self.target_alphabet = _alphabet(state["target_tokens"], self.target_tokenization)
        self._longest = math.floor(int(state["longest_source"]) * SOURCE_SLACK)
        self.examples = [Example(s, t, None if a is None else tuple(map(tuple, a))) for s, t, a in state["examples"]]

    def sample(self, rng: random.Random) -> Example:
        return rng.choice(self.examples)

    @property
    def max_source_length(self) -> int:
        return self._longest


def _alphabet(tokens: list[str], tokenization: str) -> str | list[str]:
    return "".join(tokens) if tokenization == "characters" else list(tokens)


def task_state(task: Task) -> dict[str, Any]:
    """What :class:`SavedTask` needs of ``task``, JSON-ready."""
    examples = task.generate(KEPT_EXAMPLES, 0)
    return {
        "source_tokenization": task.source_tokenization,
        "target_tokenization": task.target_tokenization,
        "source_tokens": list(alphabet_tokens(task.source_alphabet, task.source_tokenization)),
        "target_tokens": list(alphabet_tokens(task.target_alphabet, task.target_tokenization)),
        "longest_source": task.max_source_length,
        "examples": [[ex.source, ex.target, None if ex.alignment is None else [list(a) for a in ex.alignment]] for ex in examples],
    }


def save_tasks(folder: Path, task: Task, test_task: Task | None) -> None:
    """Write ``task.json`` for ``task`` and its ``test_task`` (None without test options)."""
    data = {
        "reads_data": task.data_version() is not None,
        "train": task_state(task),
        "test": None if test_task is None else task_state(test_task),
    }
    (Path(folder) / TASK_FILE).write_text(json.dumps(data, ensure_ascii=False))


def saved_tasks(config: ExperimentConfig, data: dict[str, Any] | None) -> tuple[Task, Task | None]:
    """The (task, test task or None) a model of ``config`` predicts with: from ``data`` (what
    ``task.json`` holds) for a task that reads data, else built from the config's options."""
    if data is not None and data.get("reads_data"):
        test = data.get("test")
        return SavedTask(data["train"]), None if test is None else SavedTask(test)
    from attnlab.model.task_choice import build_tasks

    return build_tasks(config)
