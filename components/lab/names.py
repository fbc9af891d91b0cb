"""Names that become folder names: an MLflow experiment's artifacts live in
``<store>/artifacts/<experiment>``, so a name like ``../../x`` would write outside the store."""

from __future__ import annotations

import re

from attnlab.lab.errors import UserError

#: Letters, digits, '-', '_' and '.', not starting with '.': no path separators, no '..'.
SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
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


def model_name(task: str) -> str:
    """The registered model of a task: ``attnlab-<task>`` (its champion is what ``attnlab predict``
    uses by default)."""
    return f"{PREFIX}{task}"


def experiment_name(task: str) -> str:
    """The default MLflow experiment of a task's runs: ``attnlab-<task>``, the registered model's
    name (a sweep over several tasks uses ``experiment_name("sweeps")``)."""
    return f"{PREFIX}{task}"
