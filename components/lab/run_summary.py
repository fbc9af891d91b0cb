"""The parts of a train run's summary (``attnlab train --json``) that are decided, not measured:
its registered model before any promotion (the fields a promotion adds:
:func:`attnlab.ops.promotion.promotion_summary`), and exact match per source length.

Pure: values in, JSON-ready dicts out.
"""

from __future__ import annotations

from typing import Any

import pandas as pd


def registered_model(name: str, version: str | None) -> dict[str, Any]:
    """The summary's ``model`` entry of registered model ``name`` before any promotion
    (``version`` None: not registered; ``uri`` then None too)."""
    uri = None if version is None else f"models:/{name}/{version}"
    return {
        "name": name,
        "version": version,
        "uri": uri,
        "champion": False,
        "champion_version": None,
        "previous_champion": None,
        "decision": None,
    }


def by_length(predictions: pd.DataFrame) -> list[dict[str, float]]:
    """Test exact match per source length (not bucketed) of an evaluation's ``predictions``
    (columns ``source_length``, ``correct``): ``[{length, count, exact_match}]`` by length."""
    grouped = predictions.groupby("source_length")["correct"].agg(["size", "mean"])
    return [{"length": int(n), "count": int(row["size"]), "exact_match": float(row["mean"])} for n, row in grouped.iterrows()]
