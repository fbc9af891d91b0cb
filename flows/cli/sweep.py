"""``attnlab sweep``: train every combination of plugins and seeds and compare them.

Everything a user gives is checked before anything starts (grid values against the installed
plugins, seeds, parallelism, the Dask address, every combination's config); a mistake is one line
and exit status 2. A failed combination is reported with the rest, then exit status 1; a lost
Prefect server is one line (exit status 2)."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import typer

from attnlab.flows.cli.options import (
    DEFAULT_SOURCE,
    ConfigSource,
    DaskAddress,
    Decoders,
    Encoders,
    ExamplePlots,
    Experiment,
    JsonOutput,
    LengthBands,
    LogModels,
    MaxParallel,
    Register,
    ResumeSweep,
    Runner,
    SavePlots,
    Scorers,
    Seeds,
    Tasks,
    Verbose,
    config_command,
)
from attnlab.flows.cli.support import (
    build_config,
    err_line,
    fail,
    failures_quietly,
    interrupts_quietly,
    other_work,
    progress_handler,
    quiet,
    threads_note,
    user_errors,
)
from attnlab.flows.tracking.errors import UserError
from attnlab.flows.tracking.store import environ_set
from attnlab.lab.output_paths import check_output_folder
from attnlab.lab.sweep_options import parse_bands, parse_names, parse_seeds
from attnlab.ops.promotion import BENCHMARK_SIZE

if TYPE_CHECKING:
    from prefect.task_runners import TaskRunner

    from attnlab.flows.services.prefect_server import Handle
    from attnlab.lab.config import ExperimentConfig

RUNNERS = ("process", "thread", "dask")


def check_dask_address(address: str, timeout: float = 3.0) -> None:
    """A ``tcp://host:port`` address that accepts connections, else UserError."""
    parts = urlsplit(address)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "tcp" or not parts.hostname or port is None:
        raise UserError(f"--dask-address {address!r}: expected tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786")
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = "connection refused" if isinstance(exc, ConnectionRefusedError) else (exc.strerror or str(exc) or "no answer in time")
        raise UserError(f"cannot reach the Dask scheduler at {address}: {reason}; start one with 'dask scheduler'") from None


def check_cluster_stores(address: str) -> None:
    """UserError unless the workers of the cluster at ``address`` can reach the MLflow store and
    the Prefect server (see :mod:`attnlab.ops.cluster`)."""
    from prefect.settings import get_current_settings

    from attnlab.flows.tracking.store import resolve_store
    from attnlab.ops.cluster import prefect_problem, tracking_problem

    where = resolve_store()
    problem = tracking_problem(where.tracking_uri, where.folder) or prefect_problem(get_current_settings().api.url)
    if problem:
        raise UserError(f"--dask-address {address}: {problem}")


def task_runner(runner: str, max_parallel: int, dask_address: str | None) -> TaskRunner[Any]:
    """The Prefect task runner of ``--runner`` (a local Dask cluster when no address)."""
    # Any: each runner has its own kind of future, and Prefect's TaskRunner is invariant in it.
    if runner == "thread":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=max_parallel)
    if runner == "process":
        from attnlab.flows.sweep.worker_pool import SeparateWorkersTaskRunner

        return SeparateWorkersTaskRunner(max_workers=max_parallel)
    from prefect_dask.task_runners import DaskTaskRunner

    if dask_address:
        return DaskTaskRunner(address=dask_address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": max_parallel, "threads_per_worker": 1, "processes": True, "dashboard_address": None})


@config_command("epochs", "train_size", "hidden_size", "learning_rate", "model_name")
def sweep(
    task: Tasks = None,
    scorer: Scorers = None,
    encoder: Encoders = None,
    decoder: Decoders = None,
    seeds: Seeds = "0",
    source: ConfigSource = DEFAULT_SOURCE,
    max_parallel: MaxParallel = None,
    runner: Runner = "process",
    dask_address: DaskAddress = None,
    length_bands: LengthBands = None,
    experiment: Experiment = None,
    save_plots: SavePlots = None,
    register: Register = False,
    log_models: LogModels = False,
    example_plots: ExamplePlots = False,
    resume: ResumeSweep = False,
    json_output: JsonOutput = False,
    verbose: Verbose = False,
) -> None:
    """Train every combination of the given plugins over the seeds, concurrently; one MLflow
    parent run holds the comparison table and plots."""
    quiet(verbose)
    with user_errors():
        check_output_folder("--save-plots", save_plots)
        summary = run_sweep(
            grid_text={"task": task, "scorer": scorer, "encoder": encoder, "decoder": decoder},
            seeds_text=seeds,
            source=source,
            max_parallel=max_parallel,
            runner=runner,
            dask_address=dask_address,
            bands_text=length_bands,
            experiment=experiment,
            verbose=verbose,
            register=register,
            log_models=log_models,
            example_plots=example_plots,
            resume=resume,
        )
        if save_plots is not None:
            summary["saved_plots"] = copy_plots(summary["parent_run_id"], save_plots)
    from attnlab.lab.summaries import format_sweep

    if json_output:
        typer.echo(json.dumps(summary, default=str, ensure_ascii=False))
    else:
        typer.echo(format_sweep(summary))
    if summary["failed"]:
        raise typer.Exit(1)


def copy_plots(parent_run_id: str, folder: Path) -> list[str]:
    """Download the sweep run's figures into ``folder`` (created if missing); their paths."""
    import shutil
    import tempfile

    import mlflow.artifacts

    with tempfile.TemporaryDirectory() as tmp:
        local = Path(mlflow.artifacts.download_artifacts(run_id=parent_run_id, artifact_path="plots", dst_path=tmp))
        try:
            folder.mkdir(parents=True, exist_ok=True)
            return [str(shutil.copy2(path, folder / path.name)) for path in sorted(local.glob("*.png"))]
        except OSError as exc:
            raise UserError(f"--save-plots {str(folder)!r} cannot be written: {exc.strerror or exc}") from None


def run_sweep(
    grid_text: dict[str, str | None], seeds_text: str, source: ConfigSource, max_parallel: int | None, runner: str,
    dask_address: str | None, bands_text: str | None, experiment: str | None, verbose: bool = False, register: bool = False,
    log_models: bool = False, example_plots: bool = False, resume: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Check everything, then run the sweep flow on the chosen runner; its summary."""
    check_runner(runner, dask_address, max_parallel)
    grid = {dim: names for dim, text in grid_text.items() if (names := parse_names(dim, text))}
    seeds = parse_seeds(seeds_text)
    bands = parse_bands(bands_text)
    base, configs = checked_configs(grid, seeds, source, experiment, dask_address, BENCHMARK_SIZE if register else None)
    from attnlab.flows.services.prefect_server import share_with_workers, start_in_background, without_heartbeats
    from attnlab.ops.sweep_workers import sweep_workers

    server = start_in_background()  # boots while the store is checked and the flow imported
    from attnlab.flows.tracking import store

    store.check_store(store.resolve_store())
    from attnlab.flows.sweep.sweep_flow import sweep_flow

    if server is not None and not server.wait():
        server = None  # Prefect has an API URL of its own
    busy, why = other_work(bool(dask_address))
    workers = sweep_workers(len(configs), max_parallel, remote=bool(dask_address), busy=busy)
    share_with_workers()
    typer.echo(
        f"sweep: {len(configs)} runs ({len(configs) // len(seeds)} combinations x {len(seeds)} seeds) on {base.task}, "
        f"{workers.parallel} at a time on the {runner} runner{f' at {dask_address}' if dask_address else ''}{threads_note(workers.threads, why)}",
        err=True,
    )
    # Read by worker processes as they start: the sweep reports each outcome, their Prefect logs stay quiet.
    workers_quiet = (
        environ_set(PREFECT_LOGGING_LEVEL="CRITICAL", PREFECT_INTERNAL_LOGGING_LEVEL="CRITICAL") if not verbose else nullcontext()
    )
    handler = progress_handler("attnlab.sweep")
    try:
        with interrupts_quietly(), workers_quiet, failures_quietly(verbose), without_heartbeats() if server is not None else nullcontext():
            flow = sweep_flow.with_options(task_runner=task_runner(runner, workers.parallel, dask_address))
            return watched(
                lambda: flow(
                    base=base, grid=grid, seeds=seeds, experiment=experiment, max_parallel=workers.parallel, threads=workers.threads,
                    bands=bands, register_models=register, log_models=log_models, example_plots=example_plots, resume=resume,
                ),
                server, verbose,
            )  # fmt: skip
    except KeyboardInterrupt:
        raise fail("interrupted: the sweep run and its unfinished runs ended KILLED", 130) from None
    finally:
        logging.getLogger("attnlab.sweep").removeHandler(handler)


def watched(run: Callable[[], dict[str, Any]], server: Handle | None, verbose: bool) -> dict[str, Any]:
    """``run()``'s value, Prefect's server (``server``: ours, or None) watched meanwhile; once it is
    lost, the sweep's one line, found among the errors Prefect raised reporting it, ends the command."""
    from attnlab.flows.services import prefect_watch
    from attnlab.ops.faults import causes

    with prefect_watch.watching(server.process if server is not None else None, verbose) as watch:
        try:
            return run()
        except Exception as exc:
            told = next((cause for cause in causes(exc) if isinstance(cause, UserError)), None)
            if told is not None and told is not exc:
                raise fail(str(told)) from None
            if told is None and watch is not None and watch.lost is not None:
                raise fail(f"lost Prefect's API server ({watch.lost}) as the sweep ended") from None
            raise


def check_runner(runner: str, dask_address: str | None, max_parallel: int | None) -> None:
    """UserError for an unknown runner, a Dask address without Dask, or fewer than one run at once."""
    if runner not in RUNNERS:
        raise UserError(f"--runner {runner!r}: choose one of {', '.join(RUNNERS)}")
    if dask_address and runner != "dask":
        raise UserError("--dask-address needs --runner dask")
    if max_parallel is not None and max_parallel < 1:
        raise UserError(f"--max-parallel {max_parallel}: give at least 1")


def checked_configs(
    grid: dict[str, list[str]],
    seeds: list[int],
    source: ConfigSource,
    experiment: str | None,
    dask_address: str | None,
    benchmark_size: int | None = None,
) -> tuple[ExperimentConfig, list[ExperimentConfig]]:
    """(the base config, every run's config), each combination checked as ``attnlab train`` checks
    its config (with ``benchmark_size``, for room for a registered model's benchmark too), and the
    Dask cluster (when given) checked to reach the stores; UserError naming the combination for
    the first problem."""
    from attnlab.evaluation.compare import Grid, grid_configs  # torch and pandas: after the names are checked
    from attnlab.training.preflight import check_config, check_start

    base = build_config(source.file, {**source.flags, **{dim: names[0] for dim, names in grid.items()}}, source.options)
    configs = grid_configs(base, Grid({dim: tuple(names) for dim, names in grid.items()}, tuple(seeds)))
    check_start(base, experiment, device=not dask_address)  # a cluster's workers may have the device
    if base.model_name is not None and len(grid.get("task", [])) > 1:
        raise UserError(f"--model-name {base.model_name!r} names one model; a sweep over several tasks registers each under its own")
    for config in {(c.task, c.scorer, c.encoder, c.decoder): c for c in configs}.values():
        try:
            check_config(config, err_line, benchmark_size)
        except UserError as exc:
            raise UserError(f"{config.scorer}/{config.encoder}/{config.decoder} on {config.task}: {exc}") from None
    if dask_address:
        check_dask_address(dask_address)
        check_cluster_stores(dask_address)
    return base, configs


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to the ``attnlab`` app."""
    app.command()(sweep)
