"""Comparing runs: the grid of a sweep and the tables that summarise its results.

Prefect-free and MLflow-free: a sweep's runs arrive as plain summaries (dicts), the tables are
pandas DataFrames.

- :func:`grid_configs` expands a base config and lists of plugin names and seeds into configs;
- :func:`run_rows` flattens the runs (one row each, failed ones with their error);
- :func:`comparison_table` is mean +- std over seeds per combination;
- :func:`format_table` renders it for a terminal.

The metrics of the table, their blocks, headings and formats are the ``sweep`` place of
:mod:`attnlab.lab.metric_catalogue`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from attnlab.lab.config import ExperimentConfig
from attnlab.lab.metric_catalogue import GROUPS, SWEEP, Metric, at, metric_entry, shown_in

#: Grid dimensions, in the order labels are built from them.
DIMENSIONS = ("task", "scorer", "encoder", "decoder")
#: The columns of :func:`run_rows` that are not metrics.
RUN_COLUMNS = ("label", "seed", "status", "run_id", "error")


def sweep_metrics(group: str | None = None) -> tuple[Metric, ...]:
    """The metrics of the sweep's table (the catalogue's ``sweep`` place), in catalogue order:
    those of the main block (``group`` ""), of one group's block, or all of them (None)."""
    return shown_in(SWEEP, group)


@dataclass(frozen=True)
class Grid:
    """Plugin names per dimension (a single value means fixed) and the seeds."""

    values: dict[str, tuple[str, ...]]
    seeds: tuple[int, ...]

    @property
    def varying(self) -> tuple[str, ...]:
        """The dimensions with more than one value (they name a combination)."""
        return tuple(dim for dim in DIMENSIONS if len(self.values.get(dim, ())) > 1)

    def label(self, config: ExperimentConfig) -> str:
        """The combination's name: its values on the varying dimensions, e.g. ``additive/gru``
        (the scorer alone when nothing varies)."""
        dims = self.varying or ("scorer",)
        return "/".join(str(getattr(config, dim)) for dim in dims)


def grid_configs(base: ExperimentConfig, grid: Grid) -> list[ExperimentConfig]:
    """One config per combination and seed, combinations in grid order, seeds innermost.

    Dimensions missing from ``grid.values`` keep the base config's value."""
    dims = [dim for dim in DIMENSIONS if grid.values.get(dim)]
    configs = []
    for combo in itertools.product(*(grid.values[dim] for dim in dims)):
        for seed in grid.seeds:
            configs.append(base.model_copy(update={**dict(zip(dims, combo)), "seed": seed}))
    return configs


def run_rows(results: Iterable[dict[str, Any]], bands: Sequence[tuple[int, int]] = ()) -> pd.DataFrame:
    """One row per run: label, seed, status, run id, error, the main block's metrics of
    :func:`sweep_metrics`, the exact match of each band of source lengths (see
    :func:`length_bands`) and the metrics of the other blocks; NaN for a failed run and for a
    metric the run lacks (a scorer that does not attend). Each result has ``label``, ``seed``,
    ``status`` and either a train summary (``summary``: a run's own measures, such as
    ``train_seconds``, are its fields) or an ``error``."""
    main = [m.name for m in sweep_metrics("")]
    blocked = [m.name for m in sweep_metrics() if m.group]
    band_names = list(length_bands([], bands))
    rows = []
    for result in results:
        summary = result.get("summary") or {}
        metrics = summary.get("metrics", {})
        row = {
            "label": result["label"],
            "seed": result["seed"],
            "status": result["status"],
            "run_id": summary.get("run_id") or result.get("run_id"),
            "error": result.get("error"),
        }
        values = {m.name: metrics.get(m.key, summary.get(m.name)) for m in sweep_metrics()}
        row.update({name: float("nan") if values[name] is None else float(values[name]) for name in main})
        row.update(length_bands(summary.get("by_length", []), bands))
        row.update({name: float("nan") if values[name] is None else float(values[name]) for name in blocked})
        rows.append(row)
    columns = [*RUN_COLUMNS, *main, *band_names, *blocked]
    return pd.DataFrame(rows, columns=columns)


def length_bands(rows: Sequence[dict[str, Any]], bands: Sequence[tuple[int, int]]) -> dict[str, float]:
    """Exact match over each band of source lengths (inclusive), from a run's per-length
    records ``[{length, count, exact_match}]``; NaN for a band with no test example."""
    out = {}
    for low, high in bands:
        inside = [r for r in rows if low <= r["length"] <= high]
        count = sum(r["count"] for r in inside)
        hits = sum(r["exact_match"] * r["count"] for r in inside)
        out[f"exact_match_{low}_{high}"] = hits / count if count else float("nan")
    return out


def comparison_table(runs: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    """Per combination (in the order of ``labels``): runs, failed runs, and ``<metric>_mean`` /
    ``<metric>_std`` over the seeds that finished for every numeric metric column of ``runs``
    (std is 0 for a single seed, NaN when none finished); ``error`` holds the first failure."""
    metrics = [c for c in runs.columns if c not in RUN_COLUMNS]
    table = []
    for label in labels:
        group = runs[runs["label"] == label]
        done = group[group["status"] == "FINISHED"]
        failed = group[group["status"] != "FINISHED"]
        row: dict[str, Any] = {"label": label, "runs": len(group), "failed": len(failed)}
        for name in metrics:
            values = done[name].astype(float)
            row[f"{name}_mean"] = values.mean() if len(values) else float("nan")
            row[f"{name}_std"] = values.std(ddof=0) if len(values) else float("nan")
        row["error"] = failed["error"].iloc[0] if len(failed) else None
        table.append(row)
    return pd.DataFrame(table)


def _shown(table: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """``mean +- std`` columns of ``metrics``, headed and written as the catalogue says (a column
    it does not declare, a band of source lengths, as the exact match it is: ``em_21_40``)."""
    shown = pd.DataFrame({"combination": table["label"], "runs": table["runs"]})
    declared = {m.name: m for m in sweep_metrics()}
    for name in metrics:
        mean, std = table[f"{name}_mean"], table[f"{name}_std"]
        entry = declared.get(name) or metric_entry(name, None, at(sweep=name.replace("exact_match", "em")))
        shown[entry.shown[SWEEP]] = ["-" if pd.isna(m) else f"{entry.short_text(m)} +- {entry.short_text(s)}" for m, s in zip(mean, std)]
    return shown


def format_table(table: pd.DataFrame) -> str:
    """The comparison table as text: ``mean +- std`` per metric, failures named. The metrics of
    each group of the catalogue (:data:`attnlab.lab.metric_catalogue.GROUPS`: greedy decoding,
    alignment, erasure) follow in a block of their own, left out when no combination has a value
    (greedy runs, scorers that do not attend, tasks without alignments)."""
    metrics = [c.removesuffix("_mean") for c in table.columns if c.endswith("_mean")]
    groups = {m.name: m.group for m in sweep_metrics()}
    text = _shown(table, [m for m in metrics if not groups.get(m)]).to_string(index=False)
    for group, title in GROUPS.items():
        block = [m for m in metrics if groups.get(m) == group]
        if block and table[[f"{m}_mean" for m in block]].notna().any().any():
            text += f"\n\n{title}:\n" + _shown(table, block).drop(columns="runs").to_string(index=False)
    failures = [f"  {row.label}: {row.failed} of {row.runs} failed: {row.error}" for row in table.itertuples() if row.failed]
    summary: str = text + ("\nfailed:\n" + "\n".join(failures) if failures else "")
    return summary
