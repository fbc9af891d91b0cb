"""``attnlab server``: a local Prefect server and MLflow server on 127.0.0.1 (for ``attnlab
schedule`` on one machine), watched until Ctrl-C or until one of them stops.

A busy port or a bad timeout is one line on stderr and exit status 2, found before anything starts.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Annotated

import typer

from attnlab.flows.cli.support import fail, sigterm_as_interrupt

if TYPE_CHECKING:
    from attnlab.flows.services.servers import Server

PREFECT_PORT = 4200
MLFLOW_PORT = 5000


def server(
    prefect_port: Annotated[
        int, typer.Option(min=1, max=65535, metavar="PORT", help="port of the Prefect server (API and UI)")
    ] = PREFECT_PORT,
    mlflow_port: Annotated[
        int, typer.Option(min=1, max=65535, metavar="PORT", help="port of the MLflow server (UI and tracking)")
    ] = MLFLOW_PORT,
    timeout: Annotated[float, typer.Option(metavar="SECONDS", help="longest wait for both servers to answer")] = 180.0,
) -> None:
    """Start a local Prefect server and MLflow server on 127.0.0.1 (for 'attnlab schedule' on one
    machine); print their URLs and the exports; Ctrl-C stops both."""
    from attnlab.data.cache import cache_root
    from attnlab.flows.services import servers
    from attnlab.flows.tracking.store import resolve_store
    from attnlab.lab.service_options import timeout_problem

    problem = timeout_problem(timeout)
    if problem:
        raise fail(problem)
    host = servers.HOST
    store = resolve_store()
    remote = not store.embedded and store.tracking_uri.startswith(("http://", "https://"))
    check_ports(host, prefect_port, None if remote else mlflow_port)
    logs = cache_root() / "server"
    env = {**os.environ}
    env.pop("PREFECT_API_URL", None)  # the server itself needs none
    # The UI asks the server where its API is: the chosen port, not Prefect's default 4200.
    env.update(PREFECT_UI_API_URL=f"http://{host}:{prefect_port}/api", PREFECT_SERVER_API_PORT=str(prefect_port))
    running = [
        servers.Server(
            "Prefect", servers.prefect_command(prefect_port, host), f"http://{host}:{prefect_port}/api/health", logs / "prefect.log", env
        )
    ]
    if not remote:
        running.append(
            servers.Server(
                "MLflow",
                servers.mlflow_ui_command(store, host, mlflow_port),
                f"http://{host}:{mlflow_port}/health",
                logs / "mlflow.log",
                servers.mlflow_server_env(),
            )
        )
    mlflow_url = store.tracking_uri if remote else f"http://{host}:{mlflow_port}"

    code = 0
    try:
        with sigterm_as_interrupt():  # SIGTERM stops both like Ctrl-C
            typer.echo(f"starting {' and '.join(s.name for s in running)} on {host} (~10-30 s; logs in {logs})", err=True)
            for process in running:
                process.start()
            servers.wait_healthy(running, timeout)
            typer.echo(f"Prefect UI  http://{host}:{prefect_port}")
            typer.echo(
                f"MLflow UI   {mlflow_url}" + ("  (MLFLOW_TRACKING_URI; not started here)" if remote else f"  (store {store.tracking_uri})")
            )
            typer.echo("in the shell where you run 'attnlab schedule':")
            typer.echo(f"  export PREFECT_API_URL=http://{host}:{prefect_port}/api")
            typer.echo(f"  export MLFLOW_TRACKING_URI={mlflow_url}")
            typer.echo("Ctrl-C stops both", err=True)
            watch(running)
    except KeyboardInterrupt:
        pass
    except servers.ServerFailed as exc:
        code = 1
        typer.echo(f"attnlab: error: {exc}", err=True)
    finally:
        servers.stop_all(running)
    raise typer.Exit(code)


def check_ports(host: str, prefect_port: int, mlflow_port: int | None) -> None:
    """Exit with one line unless both ports (``mlflow_port`` None: no MLflow server to start)
    differ and are free on ``host``."""
    from attnlab.flows.services import servers

    ports = [("--prefect-port", prefect_port)] + ([("--mlflow-port", mlflow_port)] if mlflow_port is not None else [])
    if prefect_port == mlflow_port:
        raise fail(f"--prefect-port and --mlflow-port are both {prefect_port}; give two different ports")
    for flag, port in ports:
        problem = servers.port_free(port, host)
        if problem:
            raise fail(f"cannot listen on {host}:{port} ({flag}): {problem}; choose another with {flag}")


def watch(running: list[Server]) -> None:
    """Wait, checking every second, until one of the ``running`` servers stops: ServerFailed
    naming it, its status, its last log line and its log."""
    from attnlab.flows.services import servers

    while True:
        for process in running:
            if process.exited() is not None:
                raise servers.ServerFailed(
                    f"the {process.name} server stopped with status {process.exited()}: {process.last_line()} (log: {process.log})"
                )
        time.sleep(1)
