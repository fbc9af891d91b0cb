"""How attnlab's experiments open in the MLflow UI (read from MLflow 3.17's UI code and checked in a
headless Chromium: docs/screenshots.sh).

- The UI's GenAI / Model training switch is a browser setting (``mlflow.workflowType`` in its
  local storage, GenAI until clicked); a link with ``?workflowType=machine_learning`` opens the
  model-training pages. The experiment tag ``mlflow.experimentKind`` is what the UI's own kind
  selector writes; attnlab sets it too, though 3.17 lays its pages out by the switch.
- The runs table's columns cannot be preset for a browser, but a *saved view* can: an experiment
  tag ``mlflow.sharedViewState.<id>`` holding ``{name, createdAt, updatedAt, state}``, listed in
  the UI's Views menu and opened by ``.../runs?viewStateShareKey=<id>``.

Plain data and strings: no MLflow import.
"""

from __future__ import annotations

import json
import time

from attnlab.lab.metric_catalogue import MLFLOW_VIEW, shown_in
from attnlab.lab.run_records import CHAMPION_TAG

#: The experiment tag of the experiment's kind, and the kind of a model-training experiment.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_TRAINING = "custom_model_development"
#: Saved views are experiment tags named with this prefix and the view's id.
SAVED_VIEW_PREFIX = "mlflow.sharedViewState."
RUNS_VIEW_ID = "attnlab-results"
RUNS_VIEW_NAME = "attnlab results"
#: The saved view's columns after its metrics, in order, with their widths in pixels (None: MLflow's).
OTHER_COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    ("params", "scorer", None),
    ("params", "encoder", None),
    ("params", "decoder", None),
    ("params", "task", None),
    ("tags", CHAMPION_TAG, 150),
)


def column_key(kind: str, name: str) -> str:
    """The UI's key of a runs-table column, e.g. ``metrics.`test_exact_match```."""
    return f"{kind}.`{name}`"


def runs_columns() -> tuple[tuple[str, str, int | None], ...]:
    """The runs table's columns in the saved view, in order, with their widths in pixels (None:
    MLflow's): the metrics of the catalogue's ``mlflow_view`` place, then :data:`OTHER_COLUMNS`."""
    return (*(("metrics", m.key, m.view_width) for m in shown_in(MLFLOW_VIEW)), *OTHER_COLUMNS)


def runs_view_state() -> dict[str, list[str] | dict[str, int]]:
    """The saved view's state: the runs table's columns, their order and widths."""
    columns = runs_columns()
    keys = [column_key(kind, name) for kind, name, _ in columns]
    widths = {column_key(kind, name): width for kind, name, width in columns if width}
    return {"selectedColumns": keys, "columnOrder": keys, "columnWidths": widths}


def runs_view_tag(now: float | None = None) -> tuple[str, str]:
    """The experiment tag (key, value) of attnlab's saved runs view."""
    millis = int((time.time() if now is None else now) * 1000)
    envelope = {"name": RUNS_VIEW_NAME, "createdAt": millis, "updatedAt": millis, "state": json.dumps(runs_view_state())}
    return SAVED_VIEW_PREFIX + RUNS_VIEW_ID, json.dumps(envelope)


def experiment_tags(now: float | None = None) -> dict[str, str]:
    """The tags every attnlab experiment carries: the model-training kind and the saved runs view."""
    key, value = runs_view_tag(now)
    return {EXPERIMENT_KIND_TAG: MODEL_TRAINING, key: value}


def runs_page_url(base_url: str, experiment_id: str) -> str:
    """The experiment's runs table in the model-training layout with attnlab's saved view, e.g.
    ``http://127.0.0.1:5000/#/experiments/1/runs?workflowType=machine_learning&viewStateShareKey=attnlab-results``.
    (The view key must be on the ``/runs`` page itself: the experiment's root page redirects
    there without it.)"""
    return f"{base_url.rstrip('/')}/#/experiments/{experiment_id}/runs?workflowType=machine_learning&viewStateShareKey={RUNS_VIEW_ID}"


def experiments_url(base_url: str) -> str:
    """The experiments list in the model-training layout."""
    return f"{base_url.rstrip('/')}/#/experiments?workflowType=machine_learning"
