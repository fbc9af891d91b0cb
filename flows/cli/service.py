"""``attnlab schedule`` (a cron deployment of the retrain flow, served here or deployed to a work
pool) and ``attnlab server`` (a local Prefect server and MLflow server on 127.0.0.1).

Every mistake (bad cron, config, margin, keep; no Prefect server configured or reachable; a busy port)
is one line on stderr and exit status 2, found before anything is created.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any, Optional

import typer

from attnlab.flows.cli.support import CLI_FIELDS, build_config, check_config, fail, quiet, sigterm_as_interrupt, user_errors
from attnlab.flows.tracking.errors import UserError
from attnlab.ops.retention import DEFAULT_KEEP, keep_problem

FLOW_NAME = "attnlab-retrain"
PREFECT_PORT = 4200
MLFLOW_PORT = 5000


def register(app) -> None:
    """Add this module's commands to the ``attnlab`` app."""
    app.command()(schedule)
    app.command()(server)


# --------------------------------------------------------------------------- schedule


def check_schedule(cron: str, timezone: str) -> Any:
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
            raise UserError(
                f"no work pool {name!r} on {url}; create it first: prefect work-pool create {name} --type process"
            ) from None


def store_env(store) -> dict[str, str]:
    """The environment that points flow runs at ``store`` wherever they start (absolute paths:
    a worker's runs start in a temporary folder)."""
    if store.embedded:
        return {"ATTNLAB_MLFLOW_DIR": str(store.folder)}
    return {"MLFLOW_TRACKING_URI": store.tracking_uri}


def schedule(
    cron: str = typer.Option(..., metavar="'MIN HOUR DAY MONTH WEEKDAY'", help="when to retrain, e.g. '0 3 * * *' (03:00 every day)"),
    timezone: str = typer.Option("UTC", metavar="TZ", help="time zone of the cron expression (IANA name)"),
    name: Optional[str] = typer.Option(None, metavar="NAME", help="deployment name (default: the task's name)"),
    margin: float = typer.Option(0.0, metavar="FLOAT", help="exact-match difference on the benchmark a challenger must exceed (0: strictly better)"),
    benchmark_size: int = typer.Option(500, metavar="N", help="examples of the benchmark set (used when the registered model has none yet)"),
    work_pool: Optional[str] = typer.Option(None, metavar="NAME", help="deploy to this work pool (workers run it) instead of serving here"),
    max_concurrent: int = typer.Option(1, metavar="N", help="runs of this deployment at once, anywhere (each takes 1/N of its machine's cores)"),
    when_busy: str = typer.Option("skip", metavar="skip|queue", help="a tick that finds N runs still going: skip it (its run is cancelled) or queue it"),
    keep: int = typer.Option(DEFAULT_KEEP, metavar="N", help="model versions kept after each run: the newest N (at least 2), the champion and the one before it; "
                             "older ones are deleted from the registry (their runs and files stay)"),  # fmt: skip
    task: Optional[str] = typer.Option(None, metavar="NAME", help="task plugin (default: date)"),
    scorer: Optional[str] = typer.Option(None, metavar="NAME", help="attention scorer plugin (default: scaled_dot)"),
    encoder: Optional[str] = typer.Option(None, metavar="NAME", help="encoder plugin (default: gru)"),
    decoder: Optional[str] = typer.Option(None, metavar="NAME", help="decoder plugin (default: rnn)"),
    epochs: Optional[str] = typer.Option(None, metavar="N", help="most epochs per retrain"),
    embedding_dim: Optional[str] = typer.Option(None, metavar="N", help="embedding size"),
    hidden_size: Optional[str] = typer.Option(None, metavar="N", help="hidden size"),
    train_size: Optional[str] = typer.Option(None, metavar="N", help="training examples (fresh ones each run)"),
    batch_size: Optional[str] = typer.Option(None, metavar="N", help="batch size"),
    learning_rate: Optional[str] = typer.Option(None, metavar="FLOAT", help="Adam learning rate"),
    beam_size: Optional[str] = typer.Option(None, metavar="N", help="beam size at evaluation (1 = greedy)"),
    device: Optional[str] = typer.Option(None, metavar="DEVICE", help="auto, cpu, cuda or cuda:N"),
    config_file: Optional[Path] = typer.Option(None, "--config", metavar="FILE.yaml", help="YAML file of config keys; flags override it"),
    option: list[str] = typer.Option([], "--option", "-o", metavar="KEY=VALUE", help="KEY=VALUE config override, e.g. -o validation_size=300"),
    experiment: Optional[str] = typer.Option(None, metavar="NAME", help="MLflow experiment (default: attnlab-<task>)"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="show MLflow's and Prefect's logs in this process too"),
) -> None:
    """Retrain on a cron schedule: create a Prefect deployment of the retrain flow and serve it
    here (Ctrl-C stops; the schedule pauses until served again), or deploy it to a work pool.
    Needs a Prefect server in PREFECT_API_URL (see 'attnlab server')."""
    user_level = os.environ.get("PREFECT_LOGGING_LEVEL")
    quiet(verbose)
    flags = {key: value for key, value in locals().items() if key in CLI_FIELDS}
    with user_errors():
        from attnlab.ops.promotion import check_margin

        try:
            check_margin(margin)
        except ValueError:
            raise UserError(f"--margin {margin}: give an exact-match difference in [0, 1), e.g. 0.01") from None
        if benchmark_size < 1:
            raise UserError(f"--benchmark-size {benchmark_size}: give at least 1")
        if keep_problem(keep):
            raise UserError(f"--{keep_problem(keep)}")
        cron_schedule = check_schedule(cron, timezone)
        busy = check_busy_policy(max_concurrent, when_busy)
        config = build_config(config_file, flags, option)
        from attnlab.flows.cli.train import check_start

        # Served here, runs train on this machine; a work pool's workers may have the device.
        check_start(config, experiment, device=not work_pool)
        check_config(config)
        url = prefect_api()
        from attnlab.flows.tracking.store import check_store, resolve_store

        store = resolve_store()
        check_store(store)
        if work_pool:
            check_work_pool(work_pool, url)
        when = next_run(cron, timezone)
    os.environ.update(store_env(store))
    if user_level is None:  # runs log at INFO (Prefect UI and this terminal); a level the user set wins
        os.environ["PREFECT_LOGGING_LEVEL"] = "INFO"
    from prefect.deployments.runner import EntrypointType

    from attnlab.lab.names import model_name
    from attnlab.flows.retrain_flow import retrain_flow

    deployment = name or config.task
    parameters = {"config": config.model_dump(mode="json"), "margin": margin, "benchmark_size": benchmark_size, "experiment": experiment,
                  "concurrent_runs": max_concurrent, "keep": keep}  # fmt: skip
    common = dict(name=deployment, parameters=parameters, entrypoint_type=EntrypointType.MODULE_PATH)
    lines = [
        f"retrains {config.scorer}/{config.encoder}/{config.decoder} on {config.task} ({config.train_size} fresh "
        f"training examples each run); promotes a challenger that beats the champion by more than {margin} on the "
        f"benchmark set; tracking: {store.tracking_uri}",
        f"at most {max_concurrent} run{'s' * (max_concurrent != 1)} at a time; a tick that finds "
        f"{'it' if max_concurrent == 1 else 'them'} still going is {'skipped (its run is cancelled)' if when_busy == 'skip' else 'queued'}",
        f"keeps the newest {keep} versions of {model_name(config.task)}, the champion and the one before it; each run deletes "
        "older ones from the registry (their runs and files stay)",
        f"trigger a run by hand: prefect deployment run '{FLOW_NAME}/{deployment}'",
    ]
    if work_pool:
        with user_errors():
            retrain_flow.to_deployment(work_pool_name=work_pool, job_variables={"env": store_env(store)}, schedule=cron_schedule,
                                       concurrency_limit=busy, **common).apply()  # fmt: skip
        typer.echo(f"deployment '{FLOW_NAME}/{deployment}' created on {url}: cron '{cron}' ({timezone}), next run {when}, work pool {work_pool!r}")
        typer.echo("\n".join(lines))
        typer.echo(f"start a worker where attnlab is installed: prefect worker start --pool {work_pool}")
        if store.embedded:
            typer.echo(
                f"note: runs log to the embedded store {store.folder}; workers on other machines need a tracking "
                "server (export MLFLOW_TRACKING_URI=http://HOST:5000 before scheduling)",
                err=True,
            )
        return
    from prefect.exceptions import TerminationSignal
    from prefect.runner import Runner

    # What flow.serve() does, with the announcement between creating and serving: the deployment
    # and its schedule are written once. A second write (it used to be created, then served)
    # replaces the schedule and deletes its future runs while Prefect's scheduler may be inserting
    # runs of the one replaced: on a loaded machine a tick then fired twice.
    runner = Runner(name=deployment, pause_on_shutdown=True)
    with user_errors():
        runner.add_flow(retrain_flow, schedule=cron_schedule, concurrency_limit=busy, **common)
    typer.echo(f"deployment '{FLOW_NAME}/{deployment}' created on {url}: cron '{cron}' ({timezone}), next run {when}")
    typer.echo("\n".join(lines))
    typer.echo("serving it here: runs start in subprocesses of this one; Ctrl-C stops (the schedule pauses until served again)", err=True)
    with sigterm_as_interrupt():  # SIGTERM stops serving like Ctrl-C (the runner then pauses the schedule)
        try:
            asyncio.run(runner.start())
        except (KeyboardInterrupt, TerminationSignal):
            pass
    typer.echo("stopped serving; the schedule is paused", err=True)


# --------------------------------------------------------------------------- server


def server(
    prefect_port: int = typer.Option(PREFECT_PORT, min=1, max=65535, metavar="PORT", help="port of the Prefect server (API and UI)"),
    mlflow_port: int = typer.Option(MLFLOW_PORT, min=1, max=65535, metavar="PORT", help="port of the MLflow server (UI and tracking)"),
    timeout: float = typer.Option(180.0, metavar="SECONDS", help="longest wait for both servers to answer"),
) -> None:
    """Start a local Prefect server and MLflow server on 127.0.0.1 (for 'attnlab schedule' on one
    machine); print their URLs and the exports; Ctrl-C stops both."""
    from attnlab.flows.services import servers
    from attnlab.data.cache import cache_root
    from attnlab.flows.tracking.store import resolve_store
    from attnlab.lab.service_options import timeout_problem

    if timeout_problem(timeout):
        raise fail(timeout_problem(timeout))
    host = servers.HOST
    store = resolve_store()
    remote = not store.embedded and store.tracking_uri.startswith(("http://", "https://"))
    ports = [("--prefect-port", prefect_port)] + ([] if remote else [("--mlflow-port", mlflow_port)])
    if prefect_port == mlflow_port and not remote:
        raise fail(f"--prefect-port and --mlflow-port are both {prefect_port}; give two different ports")
    for flag, port in ports:
        problem = servers.port_free(port, host)
        if problem:
            raise fail(f"cannot listen on {host}:{port} ({flag}): {problem}; choose another with {flag}")
    logs = cache_root() / "server"
    env = {**os.environ}
    env.pop("PREFECT_API_URL", None)  # the server itself needs none
    # The UI asks the server where its API is: the chosen port, not Prefect's default 4200.
    env.update(PREFECT_UI_API_URL=f"http://{host}:{prefect_port}/api", PREFECT_SERVER_API_PORT=str(prefect_port))
    running = [
        servers.Server("Prefect", servers.prefect_command(prefect_port, host), f"http://{host}:{prefect_port}/api/health", logs / "prefect.log", env)
    ]
    if not remote:
        running.append(servers.Server("MLflow", servers.mlflow_ui_command(store, host, mlflow_port), f"http://{host}:{mlflow_port}/health", logs / "mlflow.log"))
    mlflow_url = store.tracking_uri if remote else f"http://{host}:{mlflow_port}"

    code = 0
    try:
        with sigterm_as_interrupt():  # SIGTERM stops both like Ctrl-C
            typer.echo(f"starting {' and '.join(s.name for s in running)} on {host} (~10-30 s; logs in {logs})", err=True)
            for process in running:
                process.start()
            servers.wait_healthy(running, timeout)
            typer.echo(f"Prefect UI  http://{host}:{prefect_port}")
            typer.echo(f"MLflow UI   {mlflow_url}" + ("  (MLFLOW_TRACKING_URI; not started here)" if remote else f"  (store {store.tracking_uri})"))
            typer.echo("in the shell where you run 'attnlab schedule':")
            typer.echo(f"  export PREFECT_API_URL=http://{host}:{prefect_port}/api")
            typer.echo(f"  export MLFLOW_TRACKING_URI={mlflow_url}")
            typer.echo("Ctrl-C stops both", err=True)
            while True:
                for process in running:
                    if process.exited() is not None:
                        raise servers.ServerFailed(f"the {process.name} server stopped with status {process.exited()}: {process.last_line()} (log: {process.log})")
                time.sleep(1)
    except KeyboardInterrupt:
        pass
    except servers.ServerFailed as exc:
        code = 1
        typer.echo(f"attnlab: error: {exc}", err=True)
    finally:
        servers.stop_all(running)
    raise typer.Exit(code)
