"""The tables of ``attnlab runs``: the recent runs of an experiment, and the runs left RUNNING by
a process that is gone.

Pure: the flows turn MLflow's runs into plain dicts (run records, see
:mod:`attnlab.lab.run_records`) and say which run is champion; this module builds the rows
(JSON-ready dicts) and renders them for a terminal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attnlab.lab.metric_catalogue import RUNS, RUNS_JSON, Metric, shown_in
from attnlab.lab.run_records import DATA_VERSION_TAG, MODEL_NAME_TAG, RETRAIN_SKIPPED_TAG, SHORT_DIGEST, Record, short_id, started

#: The run statuses MLflow knows, as ``--status`` accepts them.
STATUSES = ("RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED")
#: The mark of the champion's run.
CHAMPION_MARK = "*"
#: The mark of the champion's run when its model cannot be loaded.
UNUSABLE_MARK = "!"


def check_statuses(values: Iterable[str]) -> tuple[str, ...]:
    """The statuses asked for, upper-cased and without repeats; ValueError naming a status MLflow
    does not know and the ones it does."""
    chosen: list[str] = []
    for value in values:
        for part in str(value).split(","):
            status = part.strip().upper()
            if status not in STATUSES:
                raise ValueError(f"--status {part.strip()!r} is not a run status; choose from {', '.join(STATUSES)}")
            if status not in chosen:
                chosen.append(status)
    return tuple(chosen)


def _number(metrics: Mapping[str, float], key: str) -> float | None:
    value = metrics.get(key)
    return None if value is None else float(value)


def run_row(record: Record, champion_runs: Iterable[str] | Mapping[str, str | None] = ()) -> dict[str, Any]:
    """One run as a row of ``attnlab runs --json``: ids, status, start (UTC), plugins and task,
    the metrics of the catalogue's ``runs_json`` place (test exact match, token and sequence error
    rates, alignment accuracy: keyed by their headings there), epochs trained, whether
    the registered model (``model``), the data digest (``data``), why a retrain did not train
    (``skipped``, None when it did), whether it is the champion's run (``champion_runs``: the run
    ids of the model versions holding the
    champion alias) and, for the champion, why its model cannot be loaded (``champion_runs`` as a
    mapping of run id to that reason or None; ``champion_unusable``)."""
    unusable = champion_runs.get(record["run_id"]) if isinstance(champion_runs, Mapping) else None
    tags, params, metrics = record.get("tags", {}), record.get("params", {}), record.get("metrics", {})
    epochs = _number(metrics, "epochs_trained")
    return {
        "run_id": record["run_id"],
        "name": record.get("run_name") or "",
        "experiment": record.get("experiment"),
        "status": record["status"],
        "skipped": tags.get(RETRAIN_SKIPPED_TAG),
        "start_time": started(record.get("start_time")),
        **{key: tags.get(key) or params.get(key) for key in ("task", "scorer", "encoder", "decoder")},
        "model": tags.get(MODEL_NAME_TAG),
        "data": tags.get(DATA_VERSION_TAG),
        **{m.shown[RUNS_JSON]: _number(metrics, m.key) for m in shown_in(RUNS_JSON)},
        "epochs": None if epochs is None else int(epochs),
        "champion": record["run_id"] in set(champion_runs),
        "champion_unusable": unusable,
    }


def _shown(value: Any, entry: Metric | None = None) -> str:
    """A cell: ``-`` for None, a metric as the catalogue writes it, a float with 4 decimals."""
    if value is None:
        return "-"
    if entry is not None:
        return entry.text(value)
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned text columns, two spaces apart, trailing spaces trimmed."""
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    lines = [columns, *rows]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines)


def format_runs(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows of :func:`run_row` as a text table, the champion's run marked ``*``, a retrain
    that did not train shown ``SKIPPED``; the metrics of the catalogue's ``runs`` place under
    their headings there (the error rates ``token_err`` and ``seq_err``), the data digest cut to
    :data:`SHORT_DIGEST` characters."""
    if not rows:
        return ""
    shown = shown_in(RUNS)
    columns = (
        "",
        "run",
        "name",
        "status",
        "started (UTC)",
        "task",
        "model",
        "scorer/encoder/decoder",
        *(m.shown[RUNS] for m in shown),
        "epochs",
        "data",
    )
    body = []
    for row in rows:
        plugins = "/".join(str(row.get(key) or "-") for key in ("scorer", "encoder", "decoder"))
        body.append(
            (
                (UNUSABLE_MARK if row.get("champion_unusable") else CHAMPION_MARK) if row["champion"] else "",
                short_id(row["run_id"]),
                row["name"],
                "SKIPPED" if row.get("skipped") else row["status"],
                row["start_time"],
                row.get("task") or "-",
                row.get("model") or "-",
                "-" if plugins == "-/-/-" else plugins,
                *(_shown(row.get(m.shown.get(RUNS_JSON, m.name)), m) for m in shown),
                _shown(row["epochs"]),
                (row.get("data") or "-")[:SHORT_DIGEST],
            )
        )
    text = _table(columns, body)
    if any(row.get("skipped") for row in rows):
        text += "\nSKIPPED: a scheduled retrain that did not train (its data was already trained on; the reason is its description)"
    if any(row["champion"] and not row.get("champion_unusable") for row in rows):
        text += f"\n{CHAMPION_MARK} champion: the run of the model version that holds the alias 'champion'"
    for row in rows:
        if row["champion"] and row.get("champion_unusable"):
            text += f"\n{UNUSABLE_MARK} champion, unusable (found by the last promotion): {row['champion_unusable']}"
    return text


def stale_row(record: Record, reason: str, ended: bool) -> dict[str, Any]:
    """A run left RUNNING by a process that is gone, as a row of ``attnlab runs --stale --json``."""
    return {
        "run_id": record["run_id"],
        "name": record.get("run_name") or "",
        "experiment": record.get("experiment"),
        "start_time": started(record.get("start_time")),
        "reason": reason,
        "ended": ended,
    }


def format_stale(rows: Sequence[Mapping[str, Any]], end_command: str = "attnlab runs --stale --end") -> str:
    """The rows of :func:`stale_row` as a text table and a last line saying what was done (or
    the ``end_command`` that ends them)."""
    if not rows:
        return "no run is left RUNNING by a process that is gone"
    ended = all(row["ended"] for row in rows)
    body = [(short_id(r["run_id"]), r["name"], r["experiment"] or "-", r["start_time"], r["reason"]) for r in rows]
    text = _table(("run", "name", "experiment", "started (UTC)", "why it is stale"), body)
    if ended:
        return text + f"\nended {len(rows)} run(s) FAILED (tag attnlab.ended_by says why)"
    return text + f"\n{len(rows)} run(s) left RUNNING by a process that is gone; end them FAILED with: {end_command}"
