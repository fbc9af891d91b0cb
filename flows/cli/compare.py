"""``attnlab compare``: runs side by side (the params that differ, the test metrics, a paired
test against the first run), and with ``--plot`` their attention on the same inputs in one figure.

Only the MLflow queries live here; the table is built by :mod:`attnlab.evaluation.run_compare`,
the figure by :mod:`attnlab.viz.run_plots`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from attnlab.flows.cli.options import JsonOutput, Paired, Resamples, Verbose
from attnlab.flows.cli.paired import paired_block
from attnlab.flows.cli.runs import open_store, run_record
from attnlab.flows.cli.support import quiet, user_errors
from attnlab.flows.tracking.errors import UserError
from attnlab.lab.output_paths import check_output_file

if TYPE_CHECKING:
    from mlflow.entities import Run

    from attnlab.flows.tracking.store import Store
    from attnlab.model.predict import Prediction
    from mlflow import MlflowClient


def register(app: typer.Typer) -> None:
    """Add ``compare`` to the ``attnlab`` app."""
    app.command()(compare)


def find_runs(client: MlflowClient, store: Store, given: list[str]) -> list[Run]:
    """The MLflow runs of ``given`` ids, or of unique prefixes of them (as ``attnlab runs`` shows);
    one UserError naming every id that matches no run or more than one
    (:func:`attnlab.ops.run_ids.find_runs`)."""
    from mlflow.exceptions import MlflowException

    from attnlab.flows.tracking.store import is_missing
    from attnlab.ops import run_ids

    experiments: list[str] = []

    def by_id(key: str) -> Run | None:
        try:
            return client.get_run(key)
        except MlflowException as exc:
            if not is_missing(exc):
                raise
            return None

    def by_prefix(key: str) -> list[Run]:
        if not experiments:
            experiments.extend(e.experiment_id for e in client.search_experiments())
        return client.search_runs(experiments, run_ids.prefix_filter(key), max_results=2) if experiments else []

    return run_ids.find_runs(given, by_id, by_prefix, store.tracking_uri)


def default_inputs(client: MlflowClient, run_id: str) -> tuple[list[str], list[Any]]:
    """The first input the train flow plotted for ``run_id`` (its ``attention/weights.json``) and
    its gold alignment as the record has it (JSON; None when it has none)."""
    import mlflow.artifacts
    from mlflow.exceptions import MlflowException

    try:
        path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="attention/weights.json")
        records = json.loads(Path(path).read_text())
        return [records[0]["source"]], [records[0].get("gold")]
    except (MlflowException, OSError, ValueError, LookupError, TypeError):
        raise UserError(f"run {run_id} logged no attention inputs; give the inputs with --input TEXT") from None


def predictions_of(run_ids: list[str], inputs: list[str]) -> list[list[Prediction]]:
    """Each run's model (loaded as ``attnlab predict`` loads ``runs:/<id>/model``) on ``inputs``:
    ``[input][run]`` predictions. UserError naming the run when a model refuses an input."""
    from attnlab.flows.api import load_run_predictor

    by_run: list[list[Prediction]] = []
    for run_id in run_ids:
        try:
            predictor = load_run_predictor(run_id)
        except UserError as exc:
            raise UserError(f"{exc} (a sweep logs its runs' models only with --log-models or --register)") from None
        try:
            by_run.append(predictor.predict(inputs))
        except ValueError as exc:
            raise UserError(f"run {run_id} ({predictor.config.task}): {exc}") from None
    return [[column[i] for column in by_run] for i in range(len(inputs))]


def compare(
    run_ids: Annotated[list[str], typer.Argument(metavar="RUN", help="run ids, or their first characters as 'attnlab runs' shows them")],
    plot: Annotated[
        Path | None,
        typer.Option(metavar="FILE.png", help="draw every run's attention on the same inputs in one figure (missing folders are created)"),
    ] = None,
    inputs: Annotated[
        list[str] | None,
        typer.Option("--input", metavar="TEXT", help="with --plot: an input to draw (repeat; default: the first run's plotted test input)"),
    ] = None,
    paired: Paired = False,
    resamples: Resamples = 1000,
    json_output: JsonOutput = False,
    verbose: Verbose = False,
) -> None:
    """Compare runs side by side: the params that differ, the test metrics and a paired test against the first run; --plot draws their attention."""
    quiet(verbose)
    with user_errors():
        if len(run_ids) < 2:
            raise UserError(f"give at least two runs to compare, got {len(run_ids)}")
        if inputs and plot is None:
            raise UserError("--input chooses what --plot draws: give --plot FILE.png too")
        check_output_file("--plot", plot, "compare.png")
        from attnlab.evaluation.run_compare import comparison, format_comparison

        store, client = open_store()
        found = find_runs(client, store, run_ids)
        names = {run.info.experiment_id: client.get_experiment(run.info.experiment_id).name for run in found}
        records = [run_record(run, names[run.info.experiment_id]) for run in found]
        compared = comparison(records)
        significance, block = paired_block(client, records, paired, resamples)
        compared.update(significance)
        text = format_comparison(compared) + "\n\n" + block
        if plot is not None:
            from attnlab.evaluation.run_compare import run_label
            from attnlab.lab.run_records import short_id
            from attnlab.viz.heatmaps import save_figure
            from attnlab.viz.run_plots import attention_by_run

            ids = [record["run_id"] for record in records]
            golds = None  # the gold alignment is known for the run's own test input only
            if not inputs:
                inputs, golds = default_inputs(client, ids[0])
            grid = predictions_of(ids, inputs)
            try:
                saved = save_figure(attention_by_run([run_label(r) for r in records], grid, golds), plot)
            except OSError as exc:
                raise UserError(f"--plot {str(plot)!r} cannot be written: {exc.strerror or exc}") from None
            compared["plot"] = str(saved)
            compared["predictions"] = [
                {"input": source, "outputs": {i: p.output for i, p in zip(ids, row)}} for source, row in zip(inputs, grid)
            ]
            lines = [
                f"{source}: " + "  ".join(f"{short_id(i)} -> {p.output}" for i, p in zip(ids, row)) for source, row in zip(inputs, grid)
            ]
            text += "\n\npredictions\n" + "\n".join(lines)
    typer.echo(json.dumps(compared, ensure_ascii=False) if json_output else text)
    if plot is not None:
        typer.echo(f"saved {compared['plot']}", err=True)
