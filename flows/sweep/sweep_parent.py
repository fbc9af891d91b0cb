"""What a sweep writes to its MLflow parent run: the run itself (named by what was swept, with
the grid and the fixed config as params), the comparison tables, per-combination metrics and
figures (``plots/``), and the explorer page of every finished run on the same inputs
(``attention/``). Which runs each figure and page shows: :mod:`attnlab.evaluation.sweep_results`.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from mlflow.entities import Metric, Param

from attnlab.evaluation.compare import Grid, comparison_table, format_table, run_rows
from attnlab.evaluation.sweep_results import (
    Outcome,
    explorer_runs,
    finished_by_label,
    result_tasks,
    task_file,
)
from attnlab.flows.run.flow_runs import flow_run_tags
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking import store
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.run_records import SWEEP_TAG
from attnlab.plugins import Example
from attnlab.viz.compare_plots import (
    accuracy_by_length,
    attention_side_by_side,
    learning_curves,
)
from attnlab.viz.explorer import write_explorer
from attnlab.viz.explorer_data import model_entry, sweep_document, sweep_note
from attnlab.viz.heatmaps import save_figure
from mlflow import MlflowClient


def start_parent(client: MlflowClient, experiment: str, base: ExperimentConfig, grid: Grid, bands: list[tuple[int, int]]) -> str:
    experiment_id = tracking.ensure_experiment(client, experiment, store.resolve_store())
    swept = [dim for dim, values in grid.values.items() if values]
    # What was swept and when, e.g. "sweep scorer=dot,additive seeds=0,1 12-01 05:19:42" (long
    # lists are counted, not spelled out); a name already taken in the experiment gets " #2", ...
    spelled = {dim: grid.values[dim] for dim in swept} | {"seeds": tuple(map(str, grid.seeds))}
    parts = [f"{dim}={','.join(v) if len(v) <= 4 else f'{len(v)} values'}" for dim, v in spelled.items()]
    name = base_name = f"sweep {' '.join(parts)} {time.strftime('%m-%d %H:%M:%S')}"
    parents = client.search_runs([experiment_id], "tags.`attnlab.sweep` = 'parent'", max_results=1000)
    taken, count = {run.info.run_name for run in parents}, 1
    while name in taken:
        count += 1
        name = f"{base_name} #{count}"
    tags = {SWEEP_TAG: "parent", **flow_run_tags(), **tracking.parent_owner_tags()}
    run_id = str(client.create_run(experiment_id, run_name=name, tags=tags).info.run_id)
    params = {f"grid.{dim}": ",".join(grid.values[dim]) for dim in swept}
    params["grid.seeds"] = ",".join(map(str, grid.seeds))
    params["length_bands"] = ",".join(f"{low}-{high}" for low, high in bands) or "-"
    fixed = {k: v for k, v in tracking.config_params(base).items() if k not in swept and k != "seed"}
    client.log_batch(run_id, params=[Param(k, v) for k, v in {**params, **fixed}.items()])
    return run_id


def note_reused(client: MlflowClient, parent_run_id: str, reused: int, total: int) -> None:
    """Say (param ``reused_runs`` and a progress line) how many of the sweep's ``total`` runs a
    resumed sweep takes from earlier sweeps instead of training them; nothing when none."""
    if reused:
        client.log_param(parent_run_id, "reused_runs", f"{reused} of {total}")
        logging.getLogger("attnlab.sweep").info(
            "resumed: %d of %d runs already finished in earlier sweeps (reused, not trained again); training %d",
            reused,
            total,
            total - reused,
        )


def log_comparison(
    client: MlflowClient,
    parent_run_id: str,
    results: list[Outcome],
    labels: list[str],
    bands: list[tuple[int, int]],
    train_max: dict[str, int],
    workdir: Path,
) -> dict[str, Any]:
    """Tables, per-combination metrics and figures on the parent run; what the CLI shows."""
    runs = run_rows(results, bands)
    table = comparison_table(runs, labels)
    client.log_table(parent_run_id, runs, "tables/runs.json")
    client.log_table(parent_run_id, table, "tables/comparison.json")
    metrics = [
        Metric(f"{row['label']}/{column}", float(row[column]), 0, 0)
        for row in table.to_dict(orient="records")
        for column in table.columns
        if column.endswith(("_mean", "_std")) and row[column] == row[column]  # skip NaN
    ]
    for start in range(0, len(metrics), 500):
        client.log_batch(parent_run_id, metrics=metrics[start : start + 500])
    plots = []
    for task_name in result_tasks(results):
        finished = finished_by_label(results, labels, task_name)
        if not finished:
            continue  # every run of this task failed: no figure to draw
        panels = [(label, summaries[0]["probe"] if summaries else None) for label, summaries in finished.items()]
        figures = {
            task_file("accuracy_by_length", task_name, results): accuracy_by_length(finished, train_max.get(task_name)),
            task_file("learning_curves", task_name, results): learning_curves(finished),
            task_file("attention_by_combination", task_name, results): attention_side_by_side(panels),
        }
        for filename, figure in figures.items():
            plots.append(save_figure(figure, workdir / filename))
    tracking.log_folder(client, parent_run_id, workdir, "plots")
    return {
        "table": json.loads(table.to_json(orient="records")),
        "run_table": json.loads(runs.to_json(orient="records")),
        "text": format_table(table),
        "plots": [f"plots/{p.name}" for p in plots],
    }


def log_explorer(
    client: MlflowClient, parent_run_id: str, results: list[Outcome], shared: dict[str, list[Example]], data_seeds: dict[str, int],
    seeds: int, folder: Path,
    references: dict[str, dict[str, list[str]]] | None = None,
) -> list[str]:  # fmt: skip
    """The parent run's explorer page, ``attention/explorer.html`` (one per task when several:
    ``explorer_<task>.html``): every finished run on the task's ``shared`` examples (see
    :func:`attnlab.viz.explorer_data.sweep_document`), drawn from the data of ``data_seeds[task]``;
    ``seeds``: how many seeds the sweep ran; ``references``: task -> source -> every target of it
    (an output is right when it equals any). The artifact paths written."""
    title = f"attnlab {client.get_run(parent_run_id).info.run_name}"
    pages = []
    for task_name in result_tasks(results):
        models = [model_entry(*run) for run in explorer_runs(results, task_name)]
        if not models:
            continue
        note = sweep_note(len(shared[task_name]), data_seeds[task_name], seeds)
        filename = task_file("explorer", task_name, results, ".html")
        write_explorer(sweep_document(title, models, shared[task_name], note, (references or {}).get(task_name)), folder / filename)
        pages.append(f"attention/{filename}")
    if pages:
        tracking.log_folder(client, parent_run_id, folder, "attention")
    return pages
