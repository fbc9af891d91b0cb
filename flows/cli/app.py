"""The ``attnlab`` command: train (train.py), predict (predict.py), plugins and ui (plugins.py),
sweep (sweep.py), tune (tune.py), schedule and server (service.py, server.py), runs (runs.py),
compare (compare.py), store relocate (store.py); each module adds its commands in ``register``. Every flag is
a parameter declared ``Annotated[type, typer.Option(...)]``; a flag several commands take
(``--json``, ``--verbose``, the config flags, the runners) is declared once in options.py.

Every user mistake ends as one line on stderr (``attnlab: error: ...``) and exit status 2; a
Ctrl-C during training ends the MLflow run KILLED and exits 130. Heavy libraries (torch, prefect,
mlflow) are imported inside the commands that need them, after the log levels are set.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer
import typer.core

from attnlab.flows import ENV_DEFAULTS  # noqa: F401  (sets the telemetry defaults first)
from attnlab.flows.cli import compare as compare_cli
from attnlab.flows.cli import plugins as plugins_cli
from attnlab.flows.cli import predict as predict_cli
from attnlab.flows.cli import runs as runs_cli
from attnlab.flows.cli import service as service_cli
from attnlab.flows.cli import store as store_cli
from attnlab.flows.cli import sweep as sweep_cli
from attnlab.flows.cli import train as train_cli
from attnlab.flows.cli import tune as tune_cli
from attnlab.flows.cli.support import PROG

if TYPE_CHECKING:  # the click that typer vendors, whose TyperGroup this app's group extends
    from typer._click import Context, HelpFormatter


class _WholeSentenceGroup(typer.core.TyperGroup):
    """Lists each command with the whole first sentence of its help, wrapped to the terminal
    (click cuts it to what fits on one line and ends it with "...")."""

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=sys.maxsize)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


app = typer.Typer(
    name=PROG,
    cls=_WholeSentenceGroup,
    help="attnlab: train, compare and look at attention models (Prefect + MLflow underneath).",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
for module in (train_cli, predict_cli, plugins_cli, sweep_cli, tune_cli, service_cli, runs_cli, compare_cli, store_cli):
    module.register(app)


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
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        typer.echo(f"{PROG}: error: {message} (see '{where} --help')", err=True)
        return int(getattr(exc, "exit_code", 2) or 2)
    except typer.Abort:
        typer.echo(f"{PROG}: aborted", err=True)
        return 130
    return result if isinstance(result, int) else 0


def run() -> None:
    """Console-script entry point."""
    from attnlab.ops.collector import collect_less_often

    collect_less_often()
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
