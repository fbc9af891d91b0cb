"""``attnlab train``: validate the command line, check MLflow, run the train flow, print the summary
(one line per epoch while it runs, and inside epochs a progress bar on a terminal or plain lines)."""

from __future__ import annotations

import json
import logging
import time
from contextlib import ExitStack, nullcontext
from typing import TYPE_CHECKING, Annotated, Any

import typer

from attnlab.flows.cli.options import DEFAULT_SOURCE, ConfigSource, Experiment, JsonOutput, Verbose, config_command
from attnlab.flows.cli.support import (
    STARTED,
    build_config,
    err_line,
    fail,
    failures_quietly,
    interrupts_quietly,
    preload,
    progress_handler,
    quiet,
    ui_hint,
    use_free_cores,
    user_errors,
)

if TYPE_CHECKING:
    from attnlab.flows.services.prefect_server import Handle
    from attnlab.lab.config import ExperimentConfig


def register(app: typer.Typer) -> None:
    """Add ``train`` to the ``attnlab`` app."""
    app.command()(train)


@config_command()
def train(
    source: ConfigSource = DEFAULT_SOURCE,
    experiment: Experiment = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="RUN_ID",
            help="continue this stopped run (KILLED, FAILED, or cut off) from its last checkpoint, with its own config",
        ),
    ] = None,
    json_output: JsonOutput = False,
    verbose: Verbose = False,
) -> None:
    """Train, evaluate, plot and register a model (the Prefect train flow), then summarise.

    A config key takes the last value given by: its default, a YAML file (--config), the flags
    below, -o KEY=VALUE (repeatable; VALUE is read as YAML: 4, 0.1, true, [a, b]).

    \b
    -o KEY=VALUE sets any config key:
      task, task_options, test_task_options, model_name, scorer, scorer_options, encoder,
      encoder_options, decoder, decoder_options, embedding_dim, hidden_size,
      train_size, validation_size, test_size, epochs, batch_size,
      length_bucketing, learning_rate, lr_schedule, warmup_steps, weight_decay,
      label_smoothing, dropout, compile_loops, clip_norm, teacher_forcing,
      target_exact_match, checkpoint, average_last, beam_size, explain_examples,
      explain_steps, seed, device

    -o GROUP.NAME=VALUE sets option NAME of the chosen plugin of GROUP (task, scorer, encoder,
    decoder; test_task: task options for the test split only), e.g. -o scorer.heads=8 is
    scorer_options: {heads: 8} in a YAML file. 'attnlab plugins' lists every plugin's options
    with their defaults and types.

    The training recipe (docs: Training recipe): dropout, label_smoothing, weight_decay (AdamW),
    warmup_steps and lr_schedule (constant, cosine, inverse_sqrt), and which weights are kept:
    checkpoint (last, best: highest validation exact match, ties broken by lower validation
    loss) and average_last N (the mean of the last N epochs' weights).
    """
    quiet(verbose)
    with user_errors(), ExitStack() as held:  # held: the resume lock, until the run ends
        summary = run_training(source, experiment, held, verbose, json_output, resume)
    from attnlab.lab.summaries import format_summary, unusable_champion

    if json_output:
        typer.echo(json.dumps(summary, default=str, ensure_ascii=False))
    else:
        typer.echo(format_summary(summary))
    problem = unusable_champion(summary)
    if problem:
        raise fail(problem, 1)


def run_training(
    source: ConfigSource,
    experiment: str | None,
    held: ExitStack,
    verbose: bool = False,
    json_output: bool = False,
    resume: str | None = None,
) -> dict[str, Any]:
    """Validate everything a user gave, check MLflow, run the train flow (or, with ``resume``,
    continue that stopped run, its resume lock entered on ``held``); its summary with the
    wall-time split under ``timings``. Prefect's server boots while the rest starts up. Progress
    goes to stderr: a bar inside epochs on a terminal, plain lines otherwise or with
    ``json_output``."""
    from attnlab.training.phase_lines import phase_lines
    from attnlab.training.timing import Stopwatch

    watch = Stopwatch(imports=time.perf_counter() - STARTED)
    with watch("check"):
        if resume is not None:
            check_resume_alone(source, experiment)
        config = build_config(source.file, source.flags, source.options)  # a bad value is refused before anything starts
    with watch("prefect_start"):
        from attnlab.flows.services.prefect_server import start_in_background

        server = start_in_background()  # boots while torch, MLflow and Prefect are imported here
    with watch("check"):
        from attnlab.training.preflight import check_config, check_start

        check_start(config, experiment)
        sizes = check_config(config, err_line)
        from attnlab.flows.tracking.store import check_store, resolve_store

        store = resolve_store()
        check_store(store)  # an unreachable server is reported before training
        if resume is not None:
            config, experiment = resumed_config(resume, held)
            sizes = check_config(config, err_line)
    with phase_lines("start", err_line):
        with watch("imports"):
            from attnlab.flows.run.train_flow import train_flow  # noqa: F401  imported while Prefect boots

            if server is not None:
                preload()
        with watch("prefect_start"):
            if server is not None and not server.wait():
                server = None  # Prefect has an API URL of its own
    typer.echo(
        f"{f'resuming run {resume}: ' if resume else ''}training {config.scorer}/{config.encoder}/{config.decoder} on {config.task} "
        f"({'/'.join(map(str, sizes))} examples, up to "
        f"{config.epochs} epochs); tracking: {store.tracking_uri}",
        err=True,
    )
    if config.compile_loops:
        typer.echo("compile_loops: the first batches compile the GRU loops (tens of seconds)", err=True)
    with watch("check"):
        use_free_cores()
    with watch("flow"):
        summary = run_flow(config, experiment, server, verbose, json_output, resume)
    watch.seconds["total"] = time.perf_counter() - STARTED
    summary["ui"] = ui_hint(store)
    summary["timings"] = {
        **{key: round(value, 2) for key, value in watch.seconds.items()},
        "steps": summary.pop("step_seconds", {}),
    }
    return summary


def check_resume_alone(source: ConfigSource, experiment: str | None) -> None:
    """UserError when ``--resume`` comes with a config or an experiment: a resumed run keeps its own."""
    from attnlab.flows.tracking.errors import UserError

    given = [f"--{key.replace('_', '-')}" for key, value in source.flags.items() if value is not None]
    given += ["--config"] * (source.file is not None) + ["-o"] * bool(source.options) + ["--experiment"] * (experiment is not None)
    if given:
        raise UserError(f"--resume continues a run with its own config and experiment; leave out {', '.join(dict.fromkeys(given))}")


def resumed_config(run_id: str, held: ExitStack) -> tuple[Any, str]:
    """The config and experiment of the stopped run ``run_id``, its resume lock entered on
    ``held`` first (UserError when another process resumes it, or it cannot resume)."""
    from attnlab.flows.run.resume_run import resumable_run, resume_lock
    from attnlab.flows.tracking.store import use_store
    from mlflow import MlflowClient

    held.enter_context(resume_lock(run_id))
    use_store()
    return resumable_run(MlflowClient(), run_id)


def run_flow(
    config: ExperimentConfig, experiment: str | None, server: Handle | None, verbose: bool, json_output: bool, resume: str | None = None
) -> dict[str, Any]:
    """The train flow's summary, its progress shown on stderr while it runs (``server``: the
    Prefect server this command started, watched meanwhile; None when there is none); one line
    and an exit status for a diverged training (1), a user's mistake (2) or an interrupt (130)."""
    from attnlab.flows.run.train_flow import train_flow
    from attnlab.flows.services import prefect_watch
    from attnlab.flows.services.prefect_server import without_heartbeats
    from attnlab.flows.tracking.errors import UserError
    from attnlab.ops.faults import causes
    from attnlab.training.loop import TrainingDiverged

    handler = progress_handler(steps=True, json_output=json_output)
    try:
        with interrupts_quietly(), failures_quietly(verbose), without_heartbeats() if server is not None else nullcontext():
            with prefect_watch.watching(server.process if server is not None else None, verbose):
                return train_flow(config=config, experiment=experiment, resume_run_id=resume)
    except TrainingDiverged as exc:
        raise fail(f"training diverged: {exc}", 1) from None
    except Exception as exc:
        fault = next((cause for cause in causes(exc) if isinstance(cause, UserError)), None)
        if fault is None or fault is exc:
            raise
        raise fail(str(fault)) from None  # Prefect failed to report it to a server that is gone
    except KeyboardInterrupt:
        raise fail(
            "interrupted: the MLflow run ended KILLED with its metrics so far and the last checkpoint; the champion is unchanged",
            130,
        ) from None
    finally:
        logging.getLogger("attnlab.progress").removeHandler(handler)
        logging.getLogger("attnlab.training.progress.steps").setLevel(logging.NOTSET)
        handler.close()
