"""Comparing runs: the grid of a sweep and the tables that summarise its results.

Prefect-free and MLflow-free: a sweep's runs arrive as plain summaries (dicts), the tables are
pandas DataFrames.

- :func:`grid_configs` expands a base config and lists of plugin names and seeds into configs;
- :func:`run_rows` flattens the runs (one row each, failed ones with their error);
- :func:`comparison_table` is mean +- std over seeds per combination;
- :func:`format_table` renders it for a terminal.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from attnlab.lab.config import ExperimentConfig

#: Grid dimensions, in the order labels are built from them.
DIMENSIONS = ("task", "scorer", "encoder", "decoder")
#: Metrics summarised as mean and std over seeds (``test_*`` metrics of a run, and its extras).
METRICS = ("exact_match", "char_accuracy", "token_error_rate", "sequence_error_rate", "alignment_accuracy", "train_seconds", "parameters")
#: The alignment measures and erasure tests (:mod:`attnlab.evaluation.alignment`, :mod:`attnlab.evaluation.erasure`),
#: also summarised over seeds; :func:`format_table` shows them in blocks of their own.
ATTENTION_METRICS = (
    "alignment_within_one", "alignment_offset_mode", "alignment_shifted_accuracy", "alignment_error_rate",
    "erasure_flip_top", "erasure_flip_random", "erasure_flip_gold",
    "erasure_drop_top", "erasure_drop_random", "erasure_drop_gold",
)  # fmt: skip
#: Greedy decoding's output metrics of runs evaluated by beam search (``test_greedy_*``), beside
#: the beam's; a block of :func:`format_table` of their own.
GREEDY_METRICS = ("greedy_exact_match", "greedy_token_error_rate", "greedy_sequence_error_rate")
#: Blocks of :func:`format_table` after the main one: title, metric prefix (dropped in headers).
BLOCKS = (
    ("greedy decoding (the runs above used beam search)", "greedy_"),
    ("alignment", "alignment_"),
    ("erasure (teacher-forced)", "erasure_"),
)


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
    """One row per run: label, seed, status, run id, error, the metrics of :data:`METRICS`, the
    exact match of each band of source lengths (see :func:`length_bands`) and the metrics of
    :data:`ATTENTION_METRICS`; NaN for a failed run and for a metric the run lacks (a scorer that
    does not attend). Each result has ``label``, ``seed``, ``status`` and either a train summary
    (``summary``) or an ``error``."""
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
        for name in METRICS:
            value = metrics.get(f"test_{name}", summary.get(name))
            row[name] = float(value) if value is not None else float("nan")
        row.update(length_bands(summary.get("by_length", []), bands))
        for name in (*GREEDY_METRICS, *ATTENTION_METRICS):
            row[name] = float(metrics.get(f"test_{name}", float("nan")))
        rows.append(row)
    columns = ["label", "seed", "status", "run_id", "error", *METRICS, *band_names, *GREEDY_METRICS, *ATTENTION_METRICS]
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
    metrics = [c for c in runs.columns if c not in ("label", "seed", "status", "run_id", "error")]
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


def _shown(table: pd.DataFrame, metrics: Sequence[str], prefix: str = "") -> pd.DataFrame:
    """``mean +- std`` columns of ``metrics``, headed by their names less ``prefix``."""
    shown = pd.DataFrame({"combination": table["label"], "runs": table["runs"]})
    for name in metrics:
        mean, std = table[f"{name}_mean"], table[f"{name}_std"]
        digits = 0 if name == "parameters" else 1 if name.endswith(("seconds", "offset_mode")) else 3
        shown[name.removeprefix(prefix).replace("exact_match", "em")] = [
            "-" if pd.isna(m) else f"{m:,.{digits}f} +- {s:,.{digits}f}" for m, s in zip(mean, std)
        ]
    return shown


def format_table(table: pd.DataFrame) -> str:
    """The comparison table as text: ``mean +- std`` per metric, failures named. The metrics of
    :data:`GREEDY_METRICS` and :data:`ATTENTION_METRICS` follow in one block per :data:`BLOCKS`
    entry (left out when no combination has a value: greedy runs, scorers that do not attend,
    tasks without alignments)."""
    metrics = [c.removesuffix("_mean") for c in table.columns if c.endswith("_mean")]
    blocked = (*GREEDY_METRICS, *ATTENTION_METRICS)
    main = [m for m in metrics if m not in blocked]
    text = _shown(table, main).to_string(index=False)
    for title, prefix in BLOCKS:
        block = [m for m in metrics if m in blocked and m.startswith(prefix)]
        if block and table[[f"{m}_mean" for m in block]].notna().any().any():
            text += f"\n\n{title}:\n" + _shown(table, block, prefix).drop(columns="runs").to_string(index=False)
    failures = [f"  {row.label}: {row.failed} of {row.runs} failed: {row.error}" for row in table.itertuples() if row.failed]
    summary: str = text + ("\nfailed:\n" + "\n".join(failures) if failures else "")
    return summary
