"""The ``attnlab`` command: train, predict, plugins, ui; sweep (sweep_cli.py); schedule and server
(service_cli.py).

Every user mistake ends as one line on stderr (``attnlab: error: ...``) and exit status 2; a
Ctrl-C during training ends the MLflow run KILLED and exits 130. Heavy libraries (torch, prefect,
mlflow) are imported inside the commands that need them, after the log levels are set.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator, Optional

import typer

from attnlab.flows import ENV_DEFAULTS  # noqa: F401  (sets the telemetry defaults first)
from attnlab.flows.cli_support import (
    CLI_FIELDS,
    PROG,
    build_config,
    check_config,
    fail,
    interrupts_quietly,
    preload,
    progress_handler,
    quiet,
    serve,
    ui_hint,
    user_errors,
)
from attnlab.flows.errors import UserError

STARTED = time.perf_counter()
app = typer.Typer(
    name=PROG,
    help="attnlab: train, compare and look at attention models (Prefect + MLflow underneath).",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


# --------------------------------------------------------------------------- train


def format_summary(summary: dict[str, Any]) -> str:
    """The human summary of a train run (the JSON summary's main fields)."""
    metrics = summary["metrics"]
    names = ("exact_match", "char_accuracy", "alignment_accuracy", "attention_entropy")
    shown = "  ".join(f"{name} {metrics['test_' + name]:.4f}" for name in names if "test_" + name in metrics)
    model = summary["model"]
    previous = model.get("previous_champion")
    if model["champion"]:
        verdict = "new champion" + (
            f" (previous: version {previous['version']}, exact_match {previous['test_exact_match']:.4f})" if previous else " (first one)"
        )
    else:
        verdict = (
            f"not champion: version {previous['version']} keeps the alias "
            f"(exact_match {previous['test_exact_match']:.4f})"
        )
    early = ", stopped early" if summary["stopped_early"] else ""
    return "\n".join(
        [
            f"run {summary['run_id']} FINISHED in experiment {summary['experiment']}: "
            f"{summary['epochs']} epoch(s), {summary['train_seconds']:.1f} s training{early}",
            f"test:  {shown}",
            f"model: {model['name']} version {model['version']} ({model['uri']}): {verdict}",
            f"open the MLflow UI: {summary['ui']}",
        ]
    )


@app.command()
def train(
    task: Optional[str] = typer.Option(None, metavar="NAME", help="task plugin (default: date); see 'attnlab plugins'"),
    scorer: Optional[str] = typer.Option(None, metavar="NAME", help="attention scorer plugin (default: scaled_dot)"),
    encoder: Optional[str] = typer.Option(None, metavar="NAME", help="encoder plugin (default: gru)"),
    decoder: Optional[str] = typer.Option(None, metavar="NAME", help="decoder plugin (default: rnn)"),
    epochs: Optional[str] = typer.Option(None, metavar="N", help="most epochs (training stops early at the target exact match)"),
    seed: Optional[str] = typer.Option(None, metavar="N", help="seed of data, initialisation and batch order"),
    embedding_dim: Optional[str] = typer.Option(None, metavar="N", help="embedding size"),
    hidden_size: Optional[str] = typer.Option(None, metavar="N", help="hidden size"),
    train_size: Optional[str] = typer.Option(None, metavar="N", help="training examples"),
    batch_size: Optional[str] = typer.Option(None, metavar="N", help="batch size"),
    learning_rate: Optional[str] = typer.Option(None, metavar="FLOAT", help="Adam learning rate"),
    beam_size: Optional[str] = typer.Option(None, metavar="N", help="beam size at evaluation (1 = greedy)"),
    device: Optional[str] = typer.Option(None, metavar="DEVICE", help="auto, cpu, cuda or cuda:N"),
    config_file: Optional[Path] = typer.Option(
        None, "--config", metavar="FILE.yaml", help="YAML file of config keys; command-line flags override it"
    ),
    option: list[str] = typer.Option(
        [], "--option", "-o", metavar="KEY=VALUE", help="KEY=VALUE config override, e.g. -o scorer.heads=4 -o validation_size=300"
    ),
    experiment: Optional[str] = typer.Option(None, metavar="NAME", help="MLflow experiment (default: attnlab-<task>)"),
    json_output: bool = typer.Option(False, "--json", help="print the summary as one JSON object"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="show Prefect's and MLflow's logs"),
) -> None:
    """Train, evaluate, plot and register a model (the Prefect train flow), then summarise."""
    # Numbers arrive as text and are validated with the config, so a bad one is reported with
    # its value and what is allowed.
    quiet(verbose)
    flags = {key: value for key, value in locals().items() if key in CLI_FIELDS}
    with user_errors():
        summary = run_training(config_file, flags, option, experiment)
    if json_output:
        typer.echo(json.dumps(summary, default=str, ensure_ascii=False))
    else:
        typer.echo(format_summary(summary))


class _Stopwatch:
    """Adds the seconds spent in each ``with watch("name"):`` block to ``watch.seconds[name]``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {"imports": time.perf_counter() - STARTED}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started


def run_training(config_file: Path | None, flags: dict[str, Any], options: list[str], experiment: str | None) -> dict[str, Any]:
    """Validate everything a user gave, check MLflow, run the train flow; its summary with the
    wall-time split under ``timings``. Prefect's server boots while the rest starts up."""
    watch = _Stopwatch()
    with watch("check"):
        config = build_config(config_file, flags, options)
        check_config(config)  # before anything starts: a mistake costs ~1.5 s, not a server
    with watch("prefect_start"):
        from attnlab.flows.prefect_server import start_in_background, without_heartbeats

        server = start_in_background()
    with watch("check"):
        from attnlab.flows import tracking

        store = tracking.resolve_store()
        tracking.check_store(store)  # an unreachable server is reported before training
    with watch("imports"):
        from attnlab.flows.train_flow import train_flow
        from attnlab.train import TrainingDiverged

        if server is not None:
            preload()
    with watch("prefect_start"):
        if server is not None:
            server.join()
    typer.echo(
        f"training {config.scorer}/{config.encoder}/{config.decoder} on {config.task} "
        f"({config.train_size}/{config.validation_size}/{config.test_size} examples, up to "
        f"{config.epochs} epochs); tracking: {store.tracking_uri}",
        err=True,
    )
    if config.compile_loops:
        typer.echo("compile_loops: the first batches compile the GRU loops (tens of seconds)", err=True)
    handler = progress_handler()
    try:
        with watch("flow"), interrupts_quietly(), without_heartbeats() if server is not None else nullcontext():
            summary = train_flow(config=config, experiment=experiment)
    except TrainingDiverged as exc:
        raise fail(f"training diverged: {exc}", 1) from None
    except KeyboardInterrupt:
        raise fail(
            "interrupted: the MLflow run ended KILLED with its metrics so far and the last "
            "checkpoint; the champion is unchanged",
            130,
        ) from None
    finally:
        logging.getLogger("attnlab.progress").removeHandler(handler)
    watch.seconds["total"] = time.perf_counter() - STARTED
    summary["ui"] = ui_hint(store)
    summary["timings"] = {
        **{key: round(value, 2) for key, value in watch.seconds.items()},
        "steps": summary.pop("step_seconds", {}),
    }
    return summary


# --------------------------------------------------------------------------- predict


def load_model(model: str | None, task: str):
    """(uri, task plugin, Seq2Seq) for --model: a local bundle folder, any MLflow model URI, or
    by default the champion of ``attnlab-<task>``."""
    if model and Path(model).is_dir() and (Path(model) / "config.json").exists():
        from attnlab.bundle import load_bundle

        _, task_plugin, seq2seq = load_bundle(Path(model))
        return model, task_plugin, seq2seq
    from attnlab.flows import tracking

    store = tracking.resolve_store()
    if model is None:
        name = tracking.model_name(task)
        if store.embedded and not (store.folder / "mlflow.db").exists():
            raise UserError(
                f"no registered model {name!r} yet (no MLflow store at {store.folder}); "
                f"train one first: attnlab train --task {task}"
            )
        tracking.check_store(store)
        tracking.use_store(store)
        from mlflow import MlflowClient

        if tracking.champion_version(MlflowClient(), name) is None:
            raise UserError(
                f"no registered model {name!r} with a {tracking.CHAMPION!r} yet in {store.tracking_uri}; "
                f"train one first: attnlab train --task {task}"
            )
    else:
        tracking.check_store(store)
        tracking.use_store(store)
    uri = tracking.resolve_model_uri(model, task)
    python_model = tracking.load_pyfunc(uri).unwrap_python_model()
    return uri, python_model.task, python_model.model


def _plot_paths(plot: Path, count: int) -> list[Path]:
    if count == 1:
        return [plot]
    return [plot.with_name(f"{plot.stem}-{i + 1}{plot.suffix or '.png'}") for i in range(count)]


@app.command()
def predict(
    texts: list[str] = typer.Argument(..., metavar="TEXT", help="source strings, e.g. 25-12-2023"),
    model: Optional[str] = typer.Option(
        None, metavar="URI", help="MLflow model URI (models:/NAME@ALIAS, models:/NAME/VERSION, runs:/ID/model) or a bundle folder"
    ),
    task: str = typer.Option("date", metavar="NAME", help="task whose champion to use when --model is not given"),
    plot: Optional[Path] = typer.Option(None, metavar="FILE.png", help="save the attention heatmap here (PNG; FILE-N.png for several inputs)"),
    json_output: bool = typer.Option(False, "--json", help="print one JSON object"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="show MLflow's logs"),
) -> None:
    """Predict with a trained model: one line per input (default: the task's champion)."""
    quiet(verbose)
    with user_errors():
        uri, task_plugin, seq2seq = load_model(model, task)
        from attnlab.predict import check_sources
        from attnlab.predict import predict as run_predict

        try:
            check_sources(texts, task_plugin, seq2seq)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        results = run_predict(seq2seq, task_plugin, texts)
        saved = []
        if plot is not None:
            if any(r.weights is None for r in results):
                raise UserError(f"model {uri} does not attend (scorer 'none'); there is no heatmap to plot")
            from attnlab.plots import attention_heatmap, head_heatmaps, save_figure

            for result, path in zip(results, _plot_paths(plot, len(results))):
                title = f"{result.source} -> {result.output}"
                saved.append(str(save_figure(attention_heatmap(result.weights, result.source_tokens, result.output_tokens, title), path)))
                if result.head_weights is not None:
                    heads = path.with_name(f"{path.stem}-heads{path.suffix or '.png'}")
                    saved.append(str(save_figure(head_heatmaps(result.head_weights, result.source_tokens, result.output_tokens, title), heads)))
    if json_output:
        payload = {"model": uri, "predictions": [{"source": r.source, "prediction": r.output} for r in results], "plots": saved}
        typer.echo(json.dumps(payload, ensure_ascii=False))
        return
    for result in results:
        typer.echo(f"{result.source} -> {result.output}")
    for path in saved:
        typer.echo(f"saved {path}", err=True)


# --------------------------------------------------------------------------- plugins


def plugin_table(check: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Every installed plugin of every group; broken ones carry their error. With ``check``, each
    one that loads is also probed with its default options (attnlab.testing.check_plugin): a
    contract violation makes it broken, and ``note`` says when it could not be checked."""
    from attnlab.plugins import GROUPS, PluginError, describe_plugins, load_plugin

    if check:
        from attnlab.testing import check_plugin
    table: dict[str, list[dict[str, Any]]] = {}
    for group in GROUPS:
        rows = []
        for info in describe_plugins(group):
            row = {"name": info.name, "target": info.target, "distribution": info.distribution, "ok": True, "error": None}
            try:
                load_plugin(group, info.name)
                if check:
                    row["note"] = check_plugin(group, info.name)
            except PluginError as exc:
                row.update(ok=False, error=" ".join(str(exc).split()))
            rows.append(row)
        table[group] = rows
    return table


@app.command()
def plugins(
    json_output: bool = typer.Option(False, "--json", help="print one JSON object"),
    check: bool = typer.Option(
        False, "--check", help="also run each plugin once on a tiny batch and check its contract (exit 1 if any is broken)"
    ),
) -> None:
    """List every installed plugin per group, with its distribution; broken ones show their error."""
    table = plugin_table(check)
    broken = sum(not row["ok"] for rows in table.values() for row in rows)
    if json_output:
        typer.echo(json.dumps(table))
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
            if not rows:
                typer.echo("  (none installed)")
        if check:
            typer.echo(f"{broken} broken plugin(s)" if broken else "every plugin keeps its contract")
    if check and broken:
        raise typer.Exit(1)


# --------------------------------------------------------------------------- ui


def ui_command(host: str, port: int) -> list[str]:
    """The ``mlflow server`` command line that serves the embedded store's UI."""
    from attnlab.flows.tracking import resolve_store

    store = resolve_store()
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store.tracking_uri]
    if store.embedded:
        store.artifact_root.mkdir(parents=True, exist_ok=True)
        command += ["--default-artifact-root", store.artifact_root.as_uri(), "--no-serve-artifacts"]
    return command + ["--host", host, "--port", str(port), "--workers", "1"]


@app.command()
def ui(
    host: str = typer.Option("127.0.0.1", metavar="HOST", help="interface to bind (keep 127.0.0.1 unless you mean to share it)"),
    port: int = typer.Option(5000, metavar="PORT", help="port"),
) -> None:
    """Start the MLflow UI on the embedded store (Ctrl-C stops it)."""
    from attnlab.flows.servers import port_free
    from attnlab.flows.tracking import resolve_store

    store = resolve_store()
    if not store.embedded and store.tracking_uri.startswith(("http://", "https://")):
        typer.echo(f"runs are tracked on {store.tracking_uri} (MLFLOW_TRACKING_URI); open it in a browser")
        return
    problem = port_free(port, host)
    if problem:
        raise fail(f"cannot listen on {host}:{port}: {problem}; choose another with --port")
    command = ui_command(host, port)
    typer.echo(f"MLflow UI of {store.tracking_uri} on http://{host}:{port} (ready in ~10-20 s; Ctrl-C stops it)", err=True)
    raise typer.Exit(serve(command))


# Commands that live in their own modules.
from attnlab.flows import service_cli, sweep_cli  # noqa: E402

sweep_cli.register(app)
service_cli.register(app)


# --------------------------------------------------------------------------- entry point


def _cli_errors() -> tuple[type[BaseException], ...]:
    """Click's exception base: typer >= 0.25 vendors click (typer.TyperException), older typer
    uses the click package."""
    found: list[type[BaseException]] = []
    if hasattr(typer, "TyperException"):
        found.append(typer.TyperException)
    try:
        import click

        found.append(click.ClickException)
    except ImportError:
        pass
    return tuple(found)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; usage errors become one line on stderr and exit status 2."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name=PROG, standalone_mode=False)
    except _cli_errors() as exc:
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError":
            typer.echo(ctx.get_help() if ctx is not None else "usage: attnlab COMMAND", err=True)
            return 2
        where = ctx.command_path if ctx is not None else PROG
        typer.echo(f"{PROG}: error: {exc.format_message()} (see '{where} --help')", err=True)
        return int(getattr(exc, "exit_code", 2) or 2)
    except typer.Abort:
        typer.echo(f"{PROG}: aborted", err=True)
        return 130
    return result if isinstance(result, int) else 0


def run() -> None:
    """Console-script entry point."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # torch, mlflow and prefect leave a large heap: the interpreter's final garbage collections
    # take ~2.5 s here. Freezing it skips them; everything was written and flushed already.
    import gc

    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
