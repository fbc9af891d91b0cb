"""``attnlab schedule``: a cron deployment of the retrain flow, served here or deployed to a work
pool; registered with ``attnlab server`` (:mod:`attnlab.flows.cli.server`), which starts the
servers it needs.

Every mistake (bad cron, config, margin, keep; no Prefect server configured or reachable) is one
line on stderr and exit status 2, found before anything is created.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from attnlab.flows.cli.options import CONFIG_FLAGS, DEFAULT_SOURCE, ConfigSource, Experiment, Verbose, config_command
from attnlab.flows.cli.server import PREFECT_PORT, server
from attnlab.flows.cli.support import build_config, err_line, quiet, sigterm_as_interrupt, user_errors
from attnlab.flows.tracking.errors import UserError
from attnlab.ops.promotion import BENCHMARK_SIZE, DEFAULT_MARGIN
from attnlab.ops.retention import DEFAULT_KEEP, keep_problem

if TYPE_CHECKING:
    from prefect.schedules import Schedule

    from attnlab.flows.tracking.store import Store
    from attnlab.lab.config import ExperimentConfig

FLOW_NAME = "attnlab-retrain"


def register(app: typer.Typer) -> None:
    """Add ``schedule`` and ``server`` (:mod:`attnlab.flows.cli.server`) to the ``attnlab`` app."""
    app.command()(schedule)
    app.command()(server)


def check_schedule(cron: str, timezone: str) -> Schedule:
    """The Prefect cron schedule; UserError for a bad cron string or time zone."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from prefect.schedules import Cron

    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise UserError(f"--timezone {timezone!r} is not an IANA time zone (e.g. UTC, Europe/Berlin, America/New_York)") from None
    try:
        return Cron(cron, timezone=timezone)
    except ValueError:
        raise UserError(
            f"--cron {cron!r} is not a cron expression; give five fields: minute hour day-of-month month "
            "day-of-week, e.g. '0 3 * * *' (03:00 every day)"
        ) from None


def next_run(cron: str, timezone: str) -> str:
    """When the schedule fires next, e.g. '2026-11-30 03:00 UTC'."""
    from prefect.server.schemas.schedules import CronSchedule

    when = asyncio.run(CronSchedule(cron=cron, timezone=timezone).get_dates(1))[0]
    return f"{when:%Y-%m-%d %H:%M} {timezone}"


def check_busy_policy(max_concurrent: int, when_busy: str) -> Any:
    """The deployment's concurrency limit; UserError for a bad count or policy."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy

    strategies = {"skip": ConcurrencyLimitStrategy.CANCEL_NEW, "queue": ConcurrencyLimitStrategy.ENQUEUE}
    if max_concurrent < 1:
        raise UserError(f"--max-concurrent {max_concurrent}: give at least 1")
    if when_busy not in strategies:
        raise UserError(f"--when-busy {when_busy!r}: choose skip or queue")
    return ConcurrencyLimitConfig(limit=max_concurrent, collision_strategy=strategies[when_busy])


def prefect_api() -> str:
    """The configured Prefect API URL, checked to answer; UserError when there is none or it is
    down (a temporary server would accept the schedule and never run it)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if not url:
        raise UserError(
            "schedules need a Prefect server: run 'prefect server start' (or 'attnlab server') and "
            f"export PREFECT_API_URL=http://127.0.0.1:{PREFECT_PORT}/api"
        )
    with get_client(sync_client=True) as client:
        problem = client.api_healthcheck()
    if problem is not None:
        reason = str(problem).strip().splitlines()[0] if str(problem).strip() else type(problem).__name__
        raise UserError(f"cannot reach the Prefect server at {url} (PREFECT_API_URL): {reason}; start it with 'prefect server start'")
    return url


def check_work_pool(name: str, url: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            client.read_work_pool(name)
        except ObjectNotFound:
            raise UserError(f"no work pool {name!r} on {url}; create it first: prefect work-pool create {name} --type process") from None


def store_env(store: Store) -> dict[str, str]:
    """The environment that points flow runs at ``store`` wherever they start (absolute paths:
    a worker's runs start in a temporary folder)."""
    if store.folder is not None:
        return {"ATTNLAB_MLFLOW_DIR": str(store.folder)}
    return {"MLFLOW_TRACKING_URI": store.tracking_uri}


@config_command(*(field for field in CONFIG_FLAGS if field != "seed"))  # a retrain draws a fresh seed
def schedule(
    cron: Annotated[str, typer.Option(metavar="'MIN HOUR DAY MONTH WEEKDAY'", help="when to retrain, e.g. '0 3 * * *' (03:00 every day)")],
    timezone: Annotated[str, typer.Option(metavar="TZ", help="time zone of the cron expression (IANA name)")] = "UTC",
    name: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="deployment name (default: the registered model's name without 'attnlab-', e.g. date)"),
    ] = None,
    margin: Annotated[
        float, typer.Option(metavar="FLOAT", help="exact-match difference on the benchmark a challenger must exceed (0: strictly better)")
    ] = DEFAULT_MARGIN,
    benchmark_size: Annotated[
        int, typer.Option(metavar="N", help="examples of the benchmark set (used when the registered model has none yet)")
    ] = BENCHMARK_SIZE,
    work_pool: Annotated[
        str | None, typer.Option(metavar="NAME", help="deploy to this work pool (workers run it) instead of serving here")
    ] = None,
    max_concurrent: Annotated[
        int, typer.Option(metavar="N", help="runs of this deployment at once, anywhere (each takes 1/N of its machine's cores)")
    ] = 1,
    when_busy: Annotated[
        str, typer.Option(metavar="skip|queue", help="a tick that finds N runs still going: skip it (its run is cancelled) or queue it")
    ] = "skip",
    keep: Annotated[
        int,
        typer.Option(
            metavar="N",
            help="model versions kept after each run: the newest N (at least 2), the champion and the one before it; "
            "older ones are deleted from the registry (their runs and files stay)",
        ),
    ] = DEFAULT_KEEP,  # fmt: skip
    retrain_always: Annotated[
        bool,
        typer.Option(
            "--retrain-always", help="retrain at every tick, also on a file that the champion or the last retrain already trained on"
        ),
    ] = False,
    source: ConfigSource = DEFAULT_SOURCE,
    experiment: Experiment = None,
    verbose: Verbose = False,
) -> None:
    """Retrain on a cron schedule: create a Prefect deployment of the retrain flow and serve it
    here (Ctrl-C stops; the schedule pauses until served again), or deploy it to a work pool.
    Needs a Prefect server in PREFECT_API_URL (see 'attnlab server')."""
    user_level = os.environ.get("PREFECT_LOGGING_LEVEL")
    quiet(verbose)
    with user_errors():
        check_retrain_settings(margin, benchmark_size, keep)
        cron_schedule, busy = check_schedule(cron, timezone), check_busy_policy(max_concurrent, when_busy)
        config = build_config(source.file, source.flags, source.options)
        url, store, train_size = check_surroundings(config, experiment, work_pool, benchmark_size)
        when = next_run(cron, timezone)
    os.environ.update(store_env(store))
    if user_level is None:  # runs log at INFO (Prefect UI and this terminal); a level the user set wins
        os.environ["PREFECT_LOGGING_LEVEL"] = "INFO"
    from prefect.types.entrypoint import EntrypointType

    deployment = name or config.registered_model().removeprefix("attnlab-")
    parameters = {"config": config.model_dump(mode="json"), "margin": margin, "benchmark_size": benchmark_size, "experiment": experiment,
                  "concurrent_runs": max_concurrent, "keep": keep, "retrain_always": retrain_always, "verbose": verbose}  # fmt: skip
    created = f"deployment '{FLOW_NAME}/{deployment}' created on {url}: cron '{cron}' ({timezone}), next run {when}"
    lines = schedule_lines(config, train_size, store.tracking_uri, margin, max_concurrent, when_busy, keep, deployment, retrain_always)
    settings = dict(
        name=deployment, parameters=parameters, entrypoint_type=EntrypointType.MODULE_PATH, schedule=cron_schedule, concurrency_limit=busy
    )
    if work_pool:
        deploy_to_pool(work_pool, store, settings, f"{created}, work pool {work_pool!r}", lines)
    else:
        serve_here(deployment, settings, created, lines)


def check_surroundings(config: ExperimentConfig, experiment: str | None, work_pool: str | None, benchmark: int) -> tuple[str, Store, int]:
    """(Prefect's API URL, the MLflow store, the training examples of each run), each checked to
    answer, once the config's plugins, its sizes beside a ``benchmark`` of that many examples,
    the experiment name, the device and the work pool are checked; UserError for the first one."""
    from attnlab.flows.tracking.store import check_store, resolve_store
    from attnlab.training.preflight import check_config, check_start

    # Served here, runs train on this machine; a work pool's workers may have the device.
    check_start(config, experiment, device=not work_pool)
    train_size = check_config(config, err_line, benchmark)[0]
    url = prefect_api()
    store = resolve_store()
    check_store(store)
    if work_pool:
        check_work_pool(work_pool, url)
    return url, store, train_size


def check_retrain_settings(margin: float, benchmark_size: int, keep: int) -> None:
    """UserError naming the flag of a margin, benchmark size or ``--keep`` the retrain flow refuses."""
    from attnlab.ops.promotion import check_margin

    try:
        check_margin(margin)
    except ValueError:
        raise UserError(f"--margin {margin}: give an exact-match difference in [0, 1), e.g. 0.01") from None
    if benchmark_size < 1:
        raise UserError(f"--benchmark-size {benchmark_size}: give at least 1")
    if keep_problem(keep):
        raise UserError(f"--{keep_problem(keep)}")


def training_data(config: ExperimentConfig, train_size: int, retrain_always: bool) -> str:
    """What each run trains on: fresh examples, or a file's (and when a tick trains at all)."""
    path = config.task_options.get("path")
    if not path:
        return f"{train_size} fresh training examples each run"
    when = "every run" if retrain_always else "only when its data differs from what the champion and the last retrain trained on"
    return f"{train_size} training sources of {path}, {when}"


def schedule_lines(
    config: ExperimentConfig,
    train_size: int,
    tracking_uri: str,
    margin: float,
    max_concurrent: int,
    when_busy: str,
    keep: int,
    deployment: str,
    retrain_always: bool = False,
) -> list[str]:
    """What a deployment does, said once it is created: what it retrains and promotes, how many run
    at once, what it prunes and how to trigger it by hand."""
    them = "it" if max_concurrent == 1 else "them"
    busy = "skipped (its run is cancelled)" if when_busy == "skip" else "queued"
    return [
        f"retrains {config.scorer}/{config.encoder}/{config.decoder} on {config.task} ({training_data(config, train_size, retrain_always)}); "
        f"promotes a challenger that beats the champion by more than {margin} on the benchmark set; tracking: {tracking_uri}",
        f"at most {max_concurrent} run{'s' * (max_concurrent != 1)} at a time; a tick that finds {them} still going is {busy}",
        f"keeps the newest {keep} versions of {config.registered_model()}, the champion and the one before it; each run deletes "
        "older ones from the registry (their runs and files stay)",
        f"trigger a run by hand: prefect deployment run '{FLOW_NAME}/{deployment}'",
    ]


def deploy_to_pool(work_pool: str, store: Store, settings: dict[str, Any], created: str, lines: list[str]) -> None:
    """Create the deployment on ``work_pool`` (its workers run the flow), then say so."""
    from attnlab.flows.retrain_flow import retrain_flow

    with user_errors():
        deployment = retrain_flow.to_deployment(work_pool_name=work_pool, job_variables={"env": store_env(store)}, **settings)
        assert not inspect.isawaitable(deployment)  # Prefect answers a caller outside an event loop at once
        deployment.apply()
    typer.echo(created)
    typer.echo("\n".join(lines))
    typer.echo(f"start a worker where attnlab is installed: prefect worker start --pool {work_pool}")
    if store.embedded:
        typer.echo(
            f"note: runs log to the embedded store {store.folder}; workers on other machines need a tracking "
            "server (export MLFLOW_TRACKING_URI=http://HOST:5000 before scheduling)",
            err=True,
        )


def serve_here(deployment: str, settings: dict[str, Any], created: str, lines: list[str]) -> None:
    """Create the deployment and serve it in this process until Ctrl-C or SIGTERM (the schedule
    then pauses).

    What flow.serve() does, with the announcement between creating and serving: the deployment
    and its schedule are written once. A second write (it used to be created, then served)
    replaces the schedule and deletes its future runs while Prefect's scheduler may be inserting
    runs of the one replaced: on a loaded machine a tick then fired twice."""
    from prefect.exceptions import TerminationSignal
    from prefect.runner import Runner

    from attnlab.flows.retrain_flow import retrain_flow

    runner = Runner(name=deployment, pause_on_shutdown=True)
    with user_errors():
        runner.add_flow(retrain_flow, **settings)
    typer.echo(created)
    typer.echo("\n".join(lines))
    typer.echo("serving it here: runs start in subprocesses of this one; Ctrl-C stops (the schedule pauses until served again)", err=True)
    with sigterm_as_interrupt():  # SIGTERM stops serving like Ctrl-C (the runner then pauses the schedule)
        try:
            asyncio.run(runner.start())
        except (KeyboardInterrupt, TerminationSignal):
            pass
    typer.echo("stopped serving; the schedule is paused", err=True)
