"""``attnlab runs`` (the recent runs of an experiment; ``--stale``: runs left RUNNING by a process
that is gone, ``--end`` ends them FAILED), and the store queries ``attnlab compare``
(:mod:`attnlab.flows.cli.compare`) shares with it.

Only the MLflow queries live here; the tables are built by :mod:`attnlab.ops.run_listing`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from attnlab.flows.cli.options import JsonOutput, Verbose
from attnlab.flows.cli.support import quiet, user_errors
from attnlab.flows.tracking.errors import UserError

if TYPE_CHECKING:
    from mlflow.entities import Run

    from attnlab.flows.tracking.store import Store
    from mlflow import MlflowClient


def register(app: typer.Typer) -> None:
    """Add ``runs`` to the ``attnlab`` app."""
    app.command()(runs)


# --------------------------------------------------------------------------- MLflow queries


def open_store(writable: bool = False) -> tuple[Store, MlflowClient]:
    """(store, client) of the store this process uses, checked (for reading only unless
    ``writable``); UserError when the embedded store holds nothing yet."""
    from attnlab.flows.tracking import store_guard
    from attnlab.flows.tracking.store import check_store, resolve_store, use_store
    from mlflow import MlflowClient

    store = resolve_store()
    if store.folder is not None and not (store.folder / "mlflow.db").exists():
        store_guard.check_not_lost(store.folder)  # the database is lost, not yet to be made
        raise UserError(f"no MLflow store at {store.folder} yet (no run was logged there); train a model first: attnlab train")
    check_store(store, writable=writable)
    use_store(store)
    return store, MlflowClient(store.tracking_uri)


def run_record(run: Run, experiment: str | None) -> dict[str, Any]:
    """An MLflow run as the plain dict the core's tables take (see :mod:`attnlab.ops.run_listing`)."""
    return {
        "run_id": run.info.run_id,
        "run_name": run.info.run_name,
        "experiment": experiment,
        "status": run.info.status,
        "start_time": run.info.start_time,
        "tags": dict(run.data.tags),
        "params": dict(run.data.params),
        "metrics": dict(run.data.metrics),
    }


def chosen_experiments(client: MlflowClient, store: Store, experiment: str | None, task: str | None) -> dict[str, str]:
    """Experiment id -> name: ``experiment``, else ``attnlab-<task>``, else (neither given) every
    experiment of the store. UserError naming the experiments there when the one asked for is not."""
    if experiment is not None and task is not None:
        raise UserError(f"give --experiment ({experiment!r}) or --task ({task!r}), not both")
    every = {e.experiment_id: e.name for e in client.search_experiments()}
    if experiment is None and task is None:
        return every
    from attnlab.lab.names import experiment_name

    name = experiment if task is None else experiment_name(task)  # one of them is given
    found = {key: value for key, value in every.items() if value == name}
    if not found:
        names = ", ".join(sorted(every.values())) or "none"
        raise UserError(f"no experiment {name!r} in {store.tracking_uri}; experiments there: {names}")
    return found


def recent_runs(client: MlflowClient, experiments: dict[str, str], statuses: tuple[str, ...], limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` runs of ``experiments`` (with one of ``statuses`` when given) as run
    records, newest first: one query (one per status: MLflow's filter has no OR)."""
    filters = [f"attributes.status = '{status}'" for status in statuses] or [""]
    newest_first = ["attributes.start_time DESC"]
    found = [run for where in filters for run in client.search_runs(list(experiments), where, max_results=limit, order_by=newest_first)]
    found.sort(key=lambda run: run.info.start_time or 0, reverse=True)
    return [run_record(run, experiments.get(run.info.experiment_id)) for run in found[:limit]]


def champion_runs(client: MlflowClient, records: list[dict[str, Any]]) -> dict[str, str | None]:
    """The run ids of the model versions holding the champion alias of the registered models of
    ``records`` (tag ``attnlab.model_name``; ``attnlab-<task>`` for a run logged before it),
    each with why its model cannot be loaded (as the last promotion found it), or None."""
    from attnlab.flows.tracking.registry import champion_version
    from attnlab.lab.names import model_name
    from attnlab.lab.run_records import MODEL_NAME_TAG, UNUSABLE_TAG

    names = {r["tags"].get(MODEL_NAME_TAG) or model_name(r["tags"]["task"]) for r in records if r["tags"].get("task")}
    holders = (champion_version(client, name) for name in sorted(names))
    return {v.run_id: (v.tags or {}).get(UNUSABLE_TAG) for v in holders if v is not None and v.run_id}


# --------------------------------------------------------------------------- attnlab runs


def runs(
    experiment: Annotated[str | None, typer.Option(metavar="NAME", help="MLflow experiment (default: attnlab-<task>)")] = None,
    task: Annotated[str | None, typer.Option(metavar="NAME", help="list the experiment attnlab-<task> (default: date)")] = None,
    limit: Annotated[int, typer.Option(min=1, max=50000, metavar="N", help="show the newest N runs")] = 20,
    status: Annotated[
        list[str] | None,
        typer.Option(
            metavar="STATUS", help="only runs with this status (RUNNING, FINISHED, FAILED, KILLED, SCHEDULED); repeat or comma-separate"
        ),
    ] = None,
    stale: Annotated[
        bool, typer.Option("--stale", help="list the RUNNING runs whose process is gone (every experiment unless --experiment/--task)")
    ] = False,
    end: Annotated[bool, typer.Option("--end", help="with --stale: end those runs FAILED")] = False,
    json_output: JsonOutput = False,
    verbose: Verbose = False,
) -> None:
    """List recent runs: status, plugins, test metrics, the champion marked; --stale: runs left RUNNING by a dead process."""
    quiet(verbose)
    with user_errors():
        from attnlab.ops.run_listing import check_statuses

        try:
            statuses = check_statuses(status or ())
        except ValueError as exc:
            raise UserError(str(exc)) from None
        if end and not stale:
            raise UserError("--end ends stale runs: give it with --stale")
        if stale:
            if status:
                raise UserError("--stale lists RUNNING runs only: leave out --status")
            payload, text = _stale(experiment, task, end)
        else:
            payload, text = _listing(experiment, task if experiment is not None or task is not None else "date", statuses, limit)
    typer.echo(json.dumps(payload, ensure_ascii=False) if json_output else text)


def _listing(experiment: str | None, task: str | None, statuses: tuple[str, ...], limit: int) -> tuple[dict[str, Any], str]:
    from attnlab.ops.run_listing import format_runs, run_row

    store, client = open_store()
    experiments = chosen_experiments(client, store, experiment, task)
    records = recent_runs(client, experiments, statuses, limit)
    champions = champion_runs(client, records)
    rows = [run_row(record, champions) for record in records]
    names = sorted(experiments.values())
    payload = {"tracking_uri": store.tracking_uri, "experiments": names, "runs": rows}
    which = f" with status {', '.join(statuses)}" if statuses else ""
    text = format_runs(rows) if rows else f"no runs{which} in experiment {', '.join(names)} ({store.tracking_uri})"
    return payload, text


def _stale(experiment: str | None, task: str | None, end: bool) -> tuple[dict[str, Any], str]:
    from attnlab.flows.tracking.runs import end_stale_runs, find_stale_runs
    from attnlab.ops.run_listing import format_stale, stale_row

    store, client = open_store(writable=end)
    experiments = chosen_experiments(client, store, experiment, task)
    found = find_stale_runs(client, list(experiments)) if experiments else []
    records = {run.info.run_id: (run_record(run, experiments.get(run.info.experiment_id)), why) for run, why in found}
    if end and records:
        ended = dict(end_stale_runs(client, experiment_ids=list(experiments)))
        rows = [stale_row(records[run_id][0], why, True) for run_id, why in ended.items() if run_id in records]
    else:
        rows = [stale_row(record, why, False) for record, why in records.values()]
    scope = f" --experiment {experiment}" if experiment else f" --task {task}" if task else ""
    payload = {"tracking_uri": store.tracking_uri, "experiments": sorted(experiments.values()), "stale": rows}
    return payload, format_stale(rows, f"attnlab runs --stale --end{scope}")
