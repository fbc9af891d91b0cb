"""``attnlab plugins`` (every installed plugin per group, ``--check`` probes each one) and
``attnlab ui`` (the MLflow UI on the embedded store, its links printed once it answers)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from attnlab.flows.cli.options import JsonOutput
from attnlab.flows.cli.support import fail

if TYPE_CHECKING:
    from attnlab.flows.services.servers import Server
    from attnlab.flows.tracking.store import Store


def register(app: typer.Typer) -> None:
    """Add ``plugins`` and ``ui`` to the ``attnlab`` app."""
    app.command()(plugins)
    app.command()(ui)


def plugin_table(check: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Every installed plugin of every group with its ``options`` (name, default, type: read from
    its ``__init__``); broken ones carry their error. With ``check``, each one that loads is also
    probed with its default options (attnlab.plugins.testing.check_plugin): a contract violation makes it
    broken, and ``note`` says when it could not be checked."""
    from attnlab.plugins import GROUPS, PluginError, describe_plugins, load_plugin
    from attnlab.plugins.options import option_specs

    if check:
        from attnlab.plugins.testing import check_plugin
    table: dict[str, list[dict[str, Any]]] = {}
    for group in GROUPS:
        rows = []
        for info in describe_plugins(group):
            row = {"name": info.name, "target": info.target, "distribution": info.distribution, "ok": True, "error": None, "options": []}
            try:
                row["options"] = option_specs(load_plugin(group, info.name))
                if check:
                    row["note"] = check_plugin(group, info.name)
            except PluginError as exc:
                row.update(ok=False, error=" ".join(str(exc).split()))
            rows.append(row)
        table[group] = rows
    return table


def plugins(
    json_output: JsonOutput = False,
    check: Annotated[
        bool, typer.Option("--check", help="also run each plugin once on a tiny batch and check its contract (exit 1 if any is broken)")
    ] = False,
) -> None:
    """List every installed plugin per group, with its distribution and its options (default and
    type); broken ones show their error.

    Set an option with -o GROUP.NAME=VALUE on train, sweep and schedule, GROUP being task,
    scorer, encoder or decoder (test_task: the task's options for the test split only), e.g.
    -o scorer.heads=8.
    """
    table = plugin_table(check)
    broken = sum(not row["ok"] for rows in table.values() for row in rows)
    if json_output:
        typer.echo(json.dumps(table, default=repr))
    else:
        for group, rows in table.items():
            typer.echo(f"{group} (entry-point group attnlab.{group})")
            width = max((len(row["name"]) for row in rows), default=0)
            dist_width = max((len(row["distribution"]) for row in rows), default=0)
            for row in rows:
                status = row["target"] if row["ok"] else f"BROKEN: {row['error']}"
                if row["ok"] and check:
                    status += f"  ({row['note']})" if row.get("note") else "  ok"
                typer.echo(f"  {row['name']:<{width}}  {row['distribution']:<{dist_width}}  {status}")
                if row["ok"]:
                    typer.echo(f"  {'':<{width}}  options: {format_options(row['options'])}")
            if not rows:
                typer.echo("  (none installed)")
        typer.echo("set an option with -o GROUP.NAME=VALUE, e.g. attnlab train -o scorer.heads=8 (GROUP: task, scorer, encoder, decoder)")
        if check:
            typer.echo(f"{broken} broken plugin(s)" if broken else "every plugin keeps its contract")
    if check and broken:
        raise typer.Exit(1)


def format_options(options: list[dict[str, Any]]) -> str:
    """Options as a signature, e.g. ``heads: int = 4, dropout: float = 0.0``; ``none``."""
    parts = []
    for option in options:
        kind = f": {option['type']}" if option["type"] else ""
        parts.append(f"{option['name']}{kind} = {option['default']!r}")
    return ", ".join(parts) or "none"


def ui(
    host: Annotated[str, typer.Option(metavar="HOST", help="interface to bind (keep 127.0.0.1 unless you mean to share it)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, metavar="PORT", help="port")] = 5000,
    timeout: Annotated[float, typer.Option(metavar="SECONDS", help="longest wait for the UI to answer before giving up")] = 180.0,
) -> None:
    """Start the MLflow UI on the embedded store, print its links once it answers (Ctrl-C stops
    it)."""
    from attnlab.data.cache import cache_root
    from attnlab.flows.services import servers
    from attnlab.flows.tracking.store import resolve_store
    from attnlab.lab.service_options import timeout_problem

    too_short = timeout_problem(timeout)
    if too_short:
        raise fail(too_short)
    store = resolve_store()
    if not store.embedded and store.tracking_uri.startswith(("http://", "https://")):
        typer.echo(f"runs are tracked on {store.tracking_uri} (MLFLOW_TRACKING_URI); open it in a browser")
        return
    problem = servers.port_free(port, host)
    if problem:
        raise fail(f"cannot listen on {host}:{port}: {problem}; choose another with --port")
    base = f"http://{host}:{port}"
    links = ui_links(store, base)
    server = servers.Server("MLflow UI", servers.mlflow_ui_command(store, host, port), f"{base}/health",
                            cache_root() / "server" / f"mlflow-ui-{port}.log", servers.mlflow_server_env())  # fmt: skip
    typer.echo(f"MLflow UI of {store.tracking_uri} on {base} (log: {server.log}; Ctrl-C stops it)", err=True)
    raise typer.Exit(serve_ui(server, base, links, timeout))


def serve_ui(server: Server, base: str, links: list[str], timeout: float) -> int:
    """Start ``server``, say how long it has been waited for until its health URL answers, then
    print ``links`` and serve until it exits or this process is interrupted or terminated; stop
    it with all its workers. The exit status: the server's, 0 after Ctrl-C, 1 when it did not
    answer in ``timeout`` seconds or exited first (one line saying so)."""
    from attnlab.flows.cli.support import sigterm_as_interrupt
    from attnlab.flows.services import servers
    from attnlab.lab.service_options import not_answering_line

    try:
        with sigterm_as_interrupt():
            process = server.start().process
            assert process is not None  # start() started it
            with WaitingLine(server.name, base) as waiting:
                servers.wait_healthy([server], timeout, on_wait=waiting.show)
            for line in links:
                typer.echo(line, err=True)
            return process.wait()
    except KeyboardInterrupt:
        return 0
    except servers.ServerTimeout:
        typer.echo(f"attnlab: error: {not_answering_line(server.name, base, timeout, str(server.log))}", err=True)
        return 1
    except servers.ServerFailed as exc:
        typer.echo(f"attnlab: error: {exc}", err=True)
        return 1
    finally:
        server.stop()


class WaitingLine:
    """``waiting for the NAME at URL (N s)`` on stderr while a server starts: in a terminal one
    line rewritten each second (cleared at the end), else a line every ten seconds."""

    def __init__(self, name: str, url: str):
        import sys

        self.name, self.url = name, url
        self.interactive = sys.stderr.isatty()
        self.last: float | None = None

    def show(self, elapsed: float) -> None:
        from attnlab.lab.service_options import progress_due, waiting_line

        if not progress_due(elapsed, self.last, self.interactive):
            return
        self.last = elapsed
        line = waiting_line(self.name, self.url, elapsed)
        typer.echo(f"\r\033[K{line}" if self.interactive else line, err=True, nl=not self.interactive)

    def __enter__(self) -> WaitingLine:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.interactive and self.last is not None:
            typer.echo("\r\033[K", err=True, nl=False)


def ui_links(store: Store, base: str) -> list[str]:
    """Where to point a browser: each attnlab experiment's runs table in the model-training layout
    with attnlab's saved view (see :mod:`attnlab.flows.tracking.mlflow_ui`), else the experiments list."""
    from attnlab.flows.tracking.mlflow_ui import RUNS_VIEW_ID, SAVED_VIEW_PREFIX, experiments_url, runs_page_url

    lines = [f"  experiments: {experiments_url(base)}"]
    if store.folder is None or not (store.folder / "mlflow.db").exists():
        return lines
    from mlflow import MlflowClient

    for experiment in MlflowClient(store.tracking_uri).search_experiments():
        if SAVED_VIEW_PREFIX + RUNS_VIEW_ID in experiment.tags:
            lines.append(f"  {experiment.name}: {runs_page_url(base, experiment.experiment_id)}")
    return lines
