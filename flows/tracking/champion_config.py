"""The champion's config and saved task read straight from the embedded store, without importing
MLflow.

``attnlab predict`` checks its inputs against the model's task before anything heavy starts; for
the default model (the registered model's champion on the embedded store) that takes the saved
config and ``task.json`` (:mod:`attnlab.model.saved_task`), which this module reads from the SQLite file (read-only) and the model's artifacts folder: ~0.1 s
instead of ~2 s of importing MLflow. Anything unexpected (another store, another schema, a file
missing) gives None, and the command takes the usual way through MLflow.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

#: The model version holding ``alias`` of ``name``, and where its files are.
_ALIAS_QUERY = """
SELECT mv.storage_location FROM registered_model_aliases AS a
JOIN model_versions AS mv ON mv.name = a.name AND mv.version = a.version
WHERE a.name = ? AND a.alias = ?
"""


def champion_config(folder: Path, name: str, alias: str = "champion") -> tuple[dict[str, Any], dict[str, Any] | None] | None:
    """The saved config and ``task.json`` (plain dicts; None for a model saved without one) of the
    version of ``name`` holding ``alias`` in the embedded store in ``folder``; None when the config
    cannot be read this way."""
    db = folder / "mlflow.db"
    if not db.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=2)) as conn:
            row = conn.execute(_ALIAS_QUERY, (name, alias)).fetchone()
    except sqlite3.Error:
        return None
    if not row or not str(row[0]).startswith("file://"):
        return None
    # The pyfunc model keeps its bundle under artifacts/bundle/ (see attnlab.flows.pyfunc).
    bundle = Path(unquote(urlsplit(row[0]).path)) / "artifacts" / "bundle"
    config, task = _json(bundle / "config.json"), _json(bundle / "task.json")
    return None if config is None else (config, task)


def _json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when it is missing or not one."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
