"""What ``--model`` may name: a local folder (an attnlab bundle or a saved MLflow model) or an
MLflow model URI. ``models:/`` and ``runs:/`` URIs are checked here, before MLflow sees them:
their names become paths in the store, so a malformed one is refused with the allowed forms."""

from __future__ import annotations

import re
from pathlib import Path

from attnlab.lab.errors import UserError
from attnlab.lab.names import SAFE_NAME

#: The MLflow model URI schemes --model may name (besides a local folder).
URI_SCHEMES = ("models:/", "runs:/", "file:", "mlflow-artifacts:", "http://", "https://", "s3://", "gs://", "wasbs://", "hdfs:", "dbfs:")
FORMS = "models:/NAME@ALIAS, models:/NAME/VERSION or runs:/RUN_ID/model"
RULES = "NAME, and each part of a run's PATH: letters, digits, '-', '_' and '.', not first; VERSION: a number"
_NAME = SAFE_NAME.pattern
_MODELS = re.compile(rf"models:/(?:{_NAME}@[A-Za-z0-9_-]+|{_NAME}/(?:\d+|latest|Production|Staging|Archived|None)|m-[0-9a-f]+)")
_RUNS = re.compile(rf"runs:/[A-Za-z0-9_-]+(?:/{_NAME})+")


def model_uri_problem(model: str) -> str | None:
    """Why ``model`` (an MLflow model URI) is malformed, or None; only the ``models:/`` and
    ``runs:/`` forms are checked (see :data:`RULES`)."""
    scheme = _MODELS if model.startswith("models:/") else _RUNS if model.startswith("runs:/") else None
    if scheme is None or scheme.fullmatch(model):
        return None
    return f"--model {model!r} is not a model URI attnlab accepts: give {FORMS} ({RULES})"


def check_model_option(model: str | None) -> None:
    """Refuse at once a --model that is empty, a malformed ``models:/``/``runs:/`` URI, a file,
    or neither an existing path nor an MLflow model URI (None: the champion, passes)."""
    if model is None:
        return
    check_model_uri(model)
    if model.startswith(URI_SCHEMES):
        return
    path = Path(model)
    if not path.exists():
        raise UserError(f"--model {model!r} is neither a folder nor an MLflow model URI; give a bundle folder, {FORMS}")
    if not path.is_dir():
        raise UserError(
            f"--model {model!r} is a file; give the bundle folder that holds config.json, vocab.json and weights.pt, or {FORMS}"
        )


def bundle_folder(model: str | None) -> Path | None:
    """``model`` as an attnlab bundle folder: a local folder that is no saved MLflow model (one
    holding ``MLmodel``); None for a URI, the champion or an MLflow model folder."""
    if not model or model.startswith(URI_SCHEMES) or not Path(model).is_dir() or (Path(model) / "MLmodel").is_file():
        return None
    return Path(model)


def check_model_uri(model: str) -> str:
    """``model`` when it is a well-formed ``models:/``/``runs:/`` URI (or another scheme);
    UserError naming the allowed forms otherwise, and for an empty one."""
    if not model.strip():
        raise UserError(f"--model {model!r} is empty; give {FORMS} or a bundle folder, or leave --model out to use the task's champion")
    problem = model_uri_problem(model)
    if problem:
        raise UserError(problem)
    return model
