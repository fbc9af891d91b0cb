"""A run's per-source test outcomes (``tables/test_outcomes.json``, logged by every train run
since paired tests exist) read back from MLflow, for ``attnlab compare`` and a sweep's marks."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd

from attnlab.evaluation.significance import OUTCOME_COLUMNS, OUTCOMES_ARTIFACT
from mlflow import MlflowClient


def run_outcomes(client: MlflowClient, run_id: str) -> pd.DataFrame | None:
    """The outcome table of run ``run_id`` (columns :data:`~attnlab.evaluation.significance.OUTCOME_COLUMNS`),
    or None when the run has none (it failed before its evaluation, or predates the table)."""
    folder, name = OUTCOMES_ARTIFACT.rsplit("/", 1)
    if not any(item.path == OUTCOMES_ARTIFACT for item in client.list_artifacts(run_id, folder)):
        return None
    with tempfile.TemporaryDirectory(prefix="attnlab-outcomes-") as scratch:
        path = Path(client.download_artifacts(run_id, OUTCOMES_ARTIFACT, scratch))
        data = json.loads(path.read_text(encoding="utf-8"))
    frame = pd.DataFrame(data["data"], columns=data["columns"])
    return frame[list(OUTCOME_COLUMNS)]
