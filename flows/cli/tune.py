"""``attnlab tune``: an Optuna study of one arm's config (learning rate, sizes, recipe, plugin
options), each trial a train run under one MLflow parent run, pruned on its validation curve.

Everything is checked before anything trains: the space file (keys, ranges, choices), every
candidate config's extremes with the checks ``attnlab train`` makes, the runner and the stores;
a mistake is one line and exit status 2. The same command run again resumes the study.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from attnlab.flows.cli.options import (
    DEFAULT_SOURCE,
    ConfigSource,
    DaskAddress,
    Experiment,
    JsonOutput,
    MaxParallel,
    Runner,
    SaveBest,
    SpaceFile,
    Storage,
    StudyName,
    Timeout,
    Trials,
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
from attnlab.lab.output_paths import check_output_file

if TYPE_CHECKING:
    from attnlab.flows.tracking.store import Store
    from attnlab.lab.config import ExperimentConfig
    from attnlab.tuning.space import Space

#: The config flags ``attnlab tune`` takes (the arm, the data and each trial's budget).
TUNE_FLAGS = ("task", "scorer", "encoder", "decoder", "epochs", "seed", "train_size", "embedding_dim", "hidden_size", "batch_size",
              "learning_rate", "device")  # fmt: skip


@config_command(*TUNE_FLAGS)
def tune(
    space: SpaceFile,
    trials: Trials = 20,
    timeout: Timeout = None,
    source: ConfigSource = DEFAULT_SOURCE,
    study: StudyName = None,
    storage: Storage = None,
    max_parallel: MaxParallel = None,
    runner: Runner = "process",
    dask_address: DaskAddress = None,
    experiment: Experiment = None,
    save_best: SaveBest = None,
    json_output: JsonOutput = False,
    verbose: Verbose = False,
) -> None:
    """Tune one arm's config with Optuna (TPE, pruning on the validation curve); the study's parent run holds the trials, plots and best config."""
    quiet(verbose)
    with user_errors():
        check_output_file("--save-best", save_best, "best.yaml")
        summary = run_tune(space, trials, timeout, source, study, storage, max_parallel, runner, dask_address, experiment, verbose)
        if save_best is not None and summary["best_config"] is not None:
            try:
                save_best.write_text(summary["best_config"], encoding="utf-8")
            except OSError as exc:
                raise UserError(f"--save-best {str(save_best)!r} cannot be written: {exc.strerror or exc}") from None
            summary["saved_best"] = str(save_best)
    typer.echo(json.dumps(summary, default=str, ensure_ascii=False) if json_output else format_tune(summary))


def format_tune(summary: dict[str, Any]) -> str:
    """The trials table, the best trial and where everything is."""
    best = summary["best"]
    lines = [summary["text"], ""]
    if best is None:
        lines.append("no trial completed: no best config")
    else:
        lines.append(f"best: trial {best['trial']}, {summary['objective']} {best['value']:.4f}, run {best['run_id']}")
    lines.append(
        f"tune run {summary['parent_run_id']} in experiment {summary['experiment']}: {summary['counted']} trials of study "
        f"{summary['study']} ({summary['storage']})"
    )
    if best is not None:
        lines.append(
            f"best config: artifact best/config.yaml of the tune run{' and ' + summary['saved_best'] if summary.get('saved_best') else ''}"
        )
    return "\n".join(lines)


def read_space(path: Path) -> tuple[Space, dict[str, Any]]:
    """The checked search space of the file at ``path`` (and its mapping, the flow's parameter)."""
    from attnlab.lab.config_sources import read_yaml
    from attnlab.tuning.space import parse_space

    data = read_yaml(path)
    return parse_space(data, f"search space {str(path)!r}"), data


def check_candidates(base: ExperimentConfig, space: Space) -> None:
    """Check the base config as ``attnlab train`` does (and, for a baseline trial, that its values
    lie in the space), then each candidate's extremes
    (:func:`attnlab.tuning.space.extreme_values`): valid configs the plugins accept; UserError
    naming the candidate for the first problem."""
    from attnlab.model.assembly import build_model, build_task
    from attnlab.plugins import PluginError
    from attnlab.training.preflight import check_config
    from attnlab.tuning.space import apply_values, baseline_values, describe_values, extreme_values

    check_config(base, err_line)
    if space.baseline:
        baseline_values(space, base)
    task = build_task(base)
    for values in extreme_values(space):
        try:
            build_model(apply_values(base, values), task)
        except (UserError, PluginError, ValueError) as exc:
            raise UserError(f"search space at {describe_values(values)}: {exc}") from None


def run_tune(space_file: Path, trials: int, timeout_text: str | None, source: ConfigSource, study: str | None, storage: str | None,
             max_parallel: int | None, runner: str, dask_address: str | None, experiment: str | None, verbose: bool) -> dict[str, Any]:  # fmt: skip
    """Check everything, then run the tune flow on the chosen runner; its summary."""
    from attnlab.flows.cli.sweep import check_runner, task_runner, watched
    from attnlab.lab.names import check_name, experiment_name
    from attnlab.training.preflight import check_start
    from attnlab.tuning.trials import parse_duration, study_name

    check_runner(runner, dask_address, max_parallel)
    if trials < 1:
        raise UserError(f"--trials {trials}: give at least 1")
    timeout = parse_duration(timeout_text)
    searched, data = read_space(space_file)
    base = build_config(source.file, source.flags, source.options)
    check_start(base, experiment, device=not dask_address)
    check_candidates(base, searched)
    name = check_name(study or study_name(base.model_dump(mode="json"), searched.as_dict()), "--study")
    from attnlab.flows.services.prefect_server import share_with_workers, start_in_background, without_heartbeats
    from attnlab.flows.tracking import store
    from attnlab.ops.sweep_workers import sweep_workers

    server = start_in_background()
    url = checked_storage(store.resolve_store(), storage, dask_address)
    from attnlab.flows.tune.tune_flow import tune_flow

    if server is not None and not server.wait():
        server = None
    busy, why = other_work(bool(dask_address))
    workers = sweep_workers(trials, max_parallel, remote=bool(dask_address), busy=busy)
    share_with_workers()
    typer.echo(f"tune: study {name}, {trials} trials of {base.scorer}/{base.encoder}/{base.decoder} on {base.task}, "
               f"{workers.parallel} at a time on the {runner} runner{threads_note(workers.threads, why)}", err=True)  # fmt: skip
    quiet_workers = (
        environ_set(PREFECT_LOGGING_LEVEL="CRITICAL", PREFECT_INTERNAL_LOGGING_LEVEL="CRITICAL") if not verbose else nullcontext()
    )
    handler = progress_handler("attnlab.tune")
    lock = _study_lock(name)
    try:
        with (
            lock,
            interrupts_quietly(),
            quiet_workers,
            failures_quietly(verbose),
            without_heartbeats() if server is not None else nullcontext(),
        ):
            flow = tune_flow.with_options(task_runner=task_runner(runner, workers.parallel, dask_address))
            run = lambda: flow(base=base, space=data, trials=trials, study_name=name, storage_url=url,  # noqa: E731
                               experiment=experiment or experiment_name(base.task), timeout=timeout,
                               max_parallel=workers.parallel, threads=workers.threads)  # fmt: skip
            return watched(run, server, verbose)
    except KeyboardInterrupt:
        raise fail(
            "interrupted: the tune run and its unfinished trials ended KILLED; run the same command again to resume the study", 130
        ) from None
    finally:
        logging.getLogger("attnlab.tune").removeHandler(handler)


def checked_storage(where: Store, given: str | None, dask_address: str | None) -> str:
    """The study's storage URL (:func:`attnlab.flows.tune.tune_study.storage_url`) after checking the
    store; with a Dask cluster, the cluster and the stores checked and a storage its workers can
    reach required."""
    from attnlab.flows.cli.sweep import check_cluster_stores, check_dask_address
    from attnlab.flows.tracking import store
    from attnlab.flows.tune.tune_study import storage_url

    store.check_store(where)
    url = storage_url(where, given)
    if dask_address:
        check_dask_address(dask_address)
        check_cluster_stores(dask_address)
        if url.startswith("sqlite"):
            raise UserError(
                f"--dask-address {dask_address}: the study's storage {url} is a file of this machine; give --storage with a server's RDB URL the workers can reach"
            )
    return url


def _study_lock(name: str) -> AbstractContextManager[None]:
    """One tune of a study at a time on this machine (a file lock, gone with its process):
    UserError when another holds it."""
    from contextlib import contextmanager

    from filelock import FileLock, Timeout

    from attnlab.data.cache import cache_root

    folder = cache_root() / "locks"
    folder.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def held() -> Iterator[None]:
        lock = FileLock(str(folder / f"tune-{name}.lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise UserError(f"another attnlab tune is running study {name}; wait for it to end, or give another --study") from None
        try:
            yield
        finally:
            lock.release()

    return held()


def register(app: typer.Typer) -> None:
    """Add ``tune`` to the ``attnlab`` app."""
    app.command()(tune)
