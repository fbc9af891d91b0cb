"""What every ``attnlab`` command shares: one-line user errors, quiet logs, config assembly from
YAML, flags and ``-o KEY=VALUE``, progress lines, quiet interrupts and failure reports."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import typer

from attnlab.flows.cli.options import CONFIG_FLAGS
from attnlab.flows.run.store_writes import defer_interrupt
from attnlab.flows.tracking.errors import UserError
from attnlab.flows.tracking.query_interrupts import note_interrupt

if TYPE_CHECKING:
    from attnlab.flows.tracking.store import Store
    from attnlab.lab.config import ExperimentConfig

PROG = "attnlab"
#: When this process started importing the CLI (the train summary's ``timings`` count from here).
STARTED = time.perf_counter()
#: Config field -> the flag that sets it (``--embedding-dim``), for messages naming a bad value.
CLI_FIELDS = {field: "--" + field.replace("_", "-") for field in CONFIG_FLAGS}


def fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"{PROG}: error: {' '.join(str(message).split())}", err=True)
    return typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the mistakes a user can make into one line and exit status 2."""
    from pydantic import ValidationError

    from attnlab.plugins import PluginError

    try:
        yield
    except (UserError, PluginError) as exc:
        raise fail(str(exc)) from None
    except ValidationError as exc:
        from attnlab.lab.config_sources import validation_message

        raise fail(validation_message(exc, {})) from None


def quiet(verbose: bool) -> None:
    """Keep Prefect's and MLflow's logs to warnings unless --verbose (must run before they are
    imported: both read their level at import)."""
    level = "INFO" if verbose else "WARNING"
    for name in ("PREFECT_LOGGING_LEVEL", "MLFLOW_LOGGING_LEVEL"):
        if verbose:
            os.environ[name] = level
        else:
            os.environ.setdefault(name, level)
    for name in ("mlflow", "prefect", "alembic"):  # in case they were imported already
        logging.getLogger(name).setLevel(os.environ["MLFLOW_LOGGING_LEVEL"] if name != "prefect" else os.environ["PREFECT_LOGGING_LEVEL"])
    # urllib3 warns at every retry of a tracking server that does not answer; the command ends
    # with one line naming the server when the bounded retries run out.
    logging.getLogger("urllib3.connectionpool").setLevel(logging.NOTSET if verbose else logging.ERROR)
    if not verbose:
        import warnings

        warnings.filterwarnings("ignore", module=r"(mlflow|prefect|pydantic|torch)(\..*)?")
        os.environ.setdefault("PYTHONWARNINGS", "ignore")  # worker processes of sweeps


def build_config(config_file: Path | None, flags: dict[str, Any], options: list[str]) -> ExperimentConfig:
    """The validated config from a YAML file, flags and ``-o`` overrides (see
    :func:`attnlab.lab.config_sources.build_config`)."""
    from attnlab.lab.config_sources import build_config as assemble

    config = assemble(config_file, flags, options, CLI_FIELDS)
    check_plugin_names(config)
    return config


def check_plugin_names(config: ExperimentConfig) -> None:
    """UserError for a plugin name that no installed package declares, told from the entry points
    without importing torch (:func:`attnlab.training.preflight.check_config` then loads and checks
    the plugins)."""
    from attnlab.lab.sweep_options import GRID_GROUPS, unknown_plugin

    for field in GRID_GROUPS:
        problem = unknown_plugin(field, getattr(config, field))
        if problem:
            raise UserError(problem)


def err_line(line: str) -> None:
    """Print ``line`` on stderr (progress and phase lines: stdout holds the result)."""
    typer.echo(line, err=True)


class _DropInterruptNoise(logging.Filter):
    """Prefect logs a crash at ERROR level for a Ctrl-C, and a failed task and flow with their
    tracebacks for a lost tracking server; the CLI says each in one line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in ("interrupt signal", "termination signal", "TrackingLost", "RunFault", "PrefectLost"))


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a service manager, ``kill``) ends the command like Ctrl-C: a KeyboardInterrupt in
    the main thread. Elsewhere signals cannot be handled, and nothing changes."""
    import signal

    with _interrupting(signal.SIGTERM):
        yield


@contextmanager
def _interrupting(*signals: int) -> Iterator[None]:
    """Each of ``signals`` raises KeyboardInterrupt in the main thread, noted first
    (:func:`~attnlab.flows.tracking.query_interrupts.note_interrupt`); elsewhere nothing changes."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        note_interrupt()
        if defer_interrupt():  # raised once the store write under way has ended
            return
        raise KeyboardInterrupt

    previous = {number: signal.signal(number, interrupt) for number in signals}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextmanager
def interrupts_quietly() -> Iterator[None]:
    """SIGTERM ends a training like Ctrl-C (the MLflow run ends KILLED, not stuck RUNNING), and
    neither Prefect's crash reports for them nor SQLAlchemy's for a store query they cut into
    are printed."""
    import signal

    noise = _DropInterruptNoise()
    loggers = [logging.getLogger(name) for name in ("prefect.task_runs", "prefect.flow_runs", "prefect.flow_engine", "prefect.task_engine")]
    for logger in loggers:
        logger.addFilter(noise)
    try:
        with _interrupting(signal.SIGINT, signal.SIGTERM):
            yield
    finally:
        for logger in loggers:
            logger.removeFilter(noise)


def progress_handler(name: str = "attnlab.progress", steps: bool = False, json_output: bool = False) -> logging.Handler:
    """Print the INFO lines of logger ``name`` on stderr (remove and close the handler when
    done). With ``steps``, also the progress inside epochs (the ``<name>.steps`` logger): a live
    bar when stderr is a terminal and not ``json_output``, else plain periodic lines (see
    :mod:`attnlab.flows.cli.progress_display`)."""
    logger = logging.getLogger(name)
    if steps:
        from attnlab.flows.cli.progress_display import ProgressDisplay

        handler: logging.Handler = ProgressDisplay(live=sys.stderr.isatty() and not json_output)
        logging.getLogger(f"{name}.steps").setLevel(logging.DEBUG)
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return handler


def preload() -> None:
    """Import what the run needs later while Prefect's server boots on the other core: torch's
    optimizers import torch._dynamo (~1.2 s) on their first step, plots need matplotlib, the model
    logging mlflow.pyfunc."""
    import importlib

    for name in ("torch._dynamo", "attnlab.viz.heatmaps", "attnlab.flows.pyfunc", "mlflow.models"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001  only a head start; the real import reports problems
            pass


def ui_hint(store: Store) -> str:
    if store.embedded:
        return "attnlab ui  (then open the link it prints for the experiment)"
    return f"open {store.tracking_uri}" if store.tracking_uri.startswith("http") else "mlflow ui --backend-store-uri " + store.tracking_uri


class _DropFailureReports(logging.Filter):
    """Prefect logs a failed task and flow at ERROR, each with a traceback; the command itself
    says what ended the run (one line for a diverged training, a user's mistake or a fault of
    the surroundings, Python's traceback for a bug), so these are not printed twice."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


@contextmanager
def failures_quietly(verbose: bool) -> Iterator[None]:
    """Keep Prefect's reports of a failed task or flow off stderr, and MLflow's report of a
    database write that failed (a full disk): --verbose keeps them."""
    if verbose:
        yield
        return
    noise = _DropFailureReports()
    loggers = [
        logging.getLogger(name)
        for name in ("prefect.task_runs", "prefect.flow_runs", "prefect.flow_engine", "prefect.task_engine", "mlflow.store.db.utils")
    ]
    for logger in loggers:
        logger.addFilter(noise)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(noise)


def other_work(remote: bool) -> tuple[float, str]:
    """(cores the machine's other work keeps busy now, that in words where it leaves a sweep's
    or a tune's runs fewer cores than the machine has, else ""; 0.0 and "" for a remote
    cluster). Measured once the Prefect server has started, so that its start-up is not counted."""
    if remote:
        return 0.0, ""
    from attnlab.ops.threads import machine_load, threads_for_load, usable_cores

    cores = usable_cores()
    busy, why = machine_load(cores)
    return busy, why if threads_for_load(cores, busy) < cores else ""


def threads_note(threads: int | None, why: str) -> str:
    """What a sweep's or a tune's first line adds on a busy machine: each run's torch threads and
    the load (``why``, from :func:`other_work`); "" on a quiet one."""
    return f", {threads} torch thread{'s' * (threads != 1)} each ({why})" if why and threads else ""


def use_free_cores(say: bool = True) -> int:
    """Give torch the cores that other work leaves free (:func:`attnlab.ops.threads.chosen_threads`);
    on a busy machine, and when ``say``, say so in one line. The threads chosen."""
    import torch

    from attnlab.ops.threads import chosen_threads, usable_cores

    threads, why = chosen_threads()
    torch.set_num_threads(threads)
    if say and threads < usable_cores():
        typer.echo(f"busy machine ({why}): training with {threads} torch thread{'s' * (threads > 1)}", err=True)
    return threads
