"""Names that become folder names: an MLflow experiment's artifacts live in
``<store>/artifacts/<experiment>``, so a name like ``../../x`` would write outside the store."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attnlab.lab.errors import UserError

#: Letters, digits, '-', '_' and '.', not starting with '.': no path separators, no '..'.
SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
#: What a file name may hold that a model name may not.
UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
#: The longest name (a file name component must stay well under 255 bytes).
MAX_NAME_LENGTH = 128


def check_name(name: str, flag: str = "--experiment") -> str:
    """``name`` if it is safe as one folder name; else UserError naming ``flag`` and the rule."""
    if len(name) > MAX_NAME_LENGTH:
        raise UserError(f"{flag}: a name of {len(name)} characters; give at most {MAX_NAME_LENGTH}")
    if not SAFE_NAME.fullmatch(name):
        raise UserError(
            f"{flag} {name!r}: use only letters, digits, '-', '_' and '.' (not first); the name becomes a folder of the MLflow store"
        )
    return name


#: What every name attnlab gives a task's things in MLflow starts with.
PREFIX = "attnlab-"


def model_name(task: str, file: str | None = None) -> str:
    """The default registered model of a task: ``attnlab-<task>``; for a task that reads a
    ``file`` (its option ``path``), ``attnlab-<task>-<the file's name without its suffix>``, so
    every dataset has a model, and a benchmark, of its own (``lexicon.csv`` ->
    ``attnlab-pairs-lexicon``). Characters a name may not hold become ``-``."""
    if not file:
        return f"{PREFIX}{task}"
    stem = UNSAFE.sub("-", Path(str(file)).stem).strip("-.")
    return f"{PREFIX}{task}-{stem}"[:MAX_NAME_LENGTH] if stem else f"{PREFIX}{task}"


def registered_name(task: str, task_options: Mapping[str, Any], given: str | None = None) -> str:
    """The registered model of a run: ``given`` (``--model-name``), else :func:`model_name` of its
    task and the task's ``path`` option."""
    path = task_options.get("path")
    return given or model_name(task, str(path) if path else None)


def experiment_name(task: str) -> str:
    """``attnlab-<task>``: the MLflow experiment of a task's runs when they register no model of
    their own name (a sweep over several tasks uses ``experiment_name("sweeps")``); a run's
    default experiment is its registered model's name (:func:`registered_name`)."""
    return f"{PREFIX}{task}"
