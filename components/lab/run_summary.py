"""The parts of a train run's summary (``attnlab train --json``) that are decided, not measured:
its registered model before and after promotion, and exact match per source length.

Pure: values in, JSON-ready dicts out.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from attnlab.ops.promotion import Decision


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


def promotion_summary(decision: Decision, version: str, benchmark: dict[str, Any]) -> dict[str, Any]:
    """The ``model`` entry's fields once ``version`` was promoted by ``decision``: ``champion``,
    ``champion_version`` (who holds the alias now), ``previous_champion`` (the holder it was
    compared with, when another: its version and benchmark score), ``decision`` and
    ``benchmark`` (as given: run id, size, overlap)."""
    previous = None
    if decision.champion_version is not None and decision.champion_version != version:
        previous = {"version": decision.champion_version, "benchmark_score": decision.champion_score}
    return {
        "champion": decision.promoted,
        "champion_version": version if decision.promoted else decision.champion_version,
        "previous_champion": previous,
        "decision": decision.as_dict(),
        "benchmark": benchmark,
    }


def by_length(predictions: pd.DataFrame) -> list[dict[str, float]]:
    """Test exact match per source length (not bucketed) of an evaluation's ``predictions``
    (columns ``source_length``, ``correct``): ``[{length, count, exact_match}]`` by length."""
    grouped = predictions.groupby("source_length")["correct"].agg(["size", "mean"])
    return [{"length": int(n), "count": int(row["size"]), "exact_match": float(row["mean"])} for n, row in grouped.iterrows()]
