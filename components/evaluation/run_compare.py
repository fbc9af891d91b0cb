"""``attnlab compare``: runs side by side, the params in which they differ and their metrics.

Pure: runs arrive as plain dicts (run records, see :mod:`attnlab.lab.run_records`); the comparison is
a JSON-ready dict, rendered for a terminal by :func:`format_comparison`. The metrics compared and
how each is written are the ``compare`` place of :mod:`attnlab.lab.metric_catalogue`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from attnlab.lab.metric_catalogue import COMPARE, metric, shown_in
from attnlab.lab.run_records import DATA_VERSION_TAG, SHORT_DIGEST, Record, short_id, started


def run_label(record: Record) -> str:
    """A run's column heading: its short id and name."""
    name = record.get("run_name") or ""
    return f"{short_id(record['run_id'])} {name}".strip()


def differing_params(records: Sequence[Record]) -> dict[str, list[str | None]]:
    """The params whose values are not the same in every run (None: the run lacks it), sorted
    by name; each maps to one value per run, in the order of ``records``."""
    names = sorted({key for r in records for key in r.get("params", {})})
    table = {}
    for name in names:
        values = [r.get("params", {}).get(name) for r in records]
        if len(set(values)) > 1:
            table[name] = values
    return table


def compared_metrics(records: Sequence[Record]) -> dict[str, list[float | None]]:
    """The metrics of the catalogue's ``compare`` place that any run logged, by their run keys,
    one value per run (None where a run lacks it): test metrics (``test_*``) first, by name,
    then a run's own measures (``epochs_trained``, ...) in catalogue order."""
    present = {key for r in records for key in r.get("metrics", {})}
    compared = [m for m in shown_in(COMPARE) if m.key in present]
    names = sorted(m.key for m in compared if m.test) + [m.key for m in compared if not m.test]
    return {name: [_value(r.get("metrics", {}).get(name)) for r in records] for name in names}


def _value(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def comparison(records: Sequence[Record]) -> dict[str, Any]:
    """The runs (id, name, experiment, status, start, the digest of the data a task read), the
    params that differ and the metrics."""
    runs = [
        {
            "run_id": r["run_id"],
            "name": r.get("run_name") or "",
            "experiment": r.get("experiment"),
            "status": r["status"],
            "start_time": started(r.get("start_time")),
            "data": r.get("tags", {}).get(DATA_VERSION_TAG),
        }
        for r in records
    ]
    return {"runs": runs, "params": differing_params(records), "metrics": compared_metrics(records)}


def _metric_text(key: str, value: float | None) -> str:
    """One run's value of the metric logged as ``key``, as the catalogue writes it."""
    return "-" if value is None else metric(key).text(value)


def _block(title: str, labels: Sequence[str], rows: Mapping[str, Sequence[str]]) -> str:
    names = list(rows)
    first = max(len(title), *(len(n) for n in names)) if names else len(title)
    widths = [max(len(label), *(len(rows[n][i]) for n in names)) if names else len(label) for i, label in enumerate(labels)]
    lines = [f"{title:<{first}}  " + "  ".join(f"{label:>{w}}" for label, w in zip(labels, widths))]
    for name in names:
        lines.append(f"{name:<{first}}  " + "  ".join(f"{cell:>{w}}" for cell, w in zip(rows[name], widths)))
    return "\n".join(line.rstrip() for line in lines)


def format_comparison(compared: Mapping[str, Any]) -> str:
    """A line per run (with its data digest, so two versions of one file tell apart), then two
    blocks, one column per run: the params that differ (or a line saying none does) and the
    metrics."""
    runs = compared["runs"]
    labels = [short_id(r["run_id"]) for r in runs]
    cells = [
        (short_id(r["run_id"]), r["name"], r["status"], r["experiment"] or "-", f"started {r['start_time']}",
         f"data {r['data'][:SHORT_DIGEST]}" if r.get("data") else "")
        for r in runs
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in cells) for i in range(6)]
    header = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in cells]
    params = {name: ["-" if v is None else str(v) for v in values] for name, values in compared["params"].items()}
    metrics = {name: [_metric_text(name, v) for v in values] for name, values in compared["metrics"].items()}
    parts = ["\n".join(header)]
    parts.append(_block("params that differ", labels, params) if params else "params: the same in every run")
    parts.append(_block("metrics", labels, metrics) if metrics else "metrics: none logged")
    return "\n\n".join(parts)
