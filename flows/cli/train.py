"""``attnlab train``: validate the command line, check MLflow, run the train flow, print the summary
(one line per epoch while it runs, and inside epochs a progress bar on a terminal or plain lines)."""

from __future__ import annotations

import json
import logging
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator

import typer

from attnlab.flows.cli.options import (
    BatchSize,
    BeamSize,
    ConfigFile,
    ConfigOptions,
    Decoder,
    Device,
    EmbeddingDim,
    Encoder,
    Epochs,
    Experiment,
    HiddenSize,
    JsonOutput,
    LearningRate,
    Scorer,
    Seed,
    Task,
    TrainSize,
    Verbose,
)
from attnlab.flows.cli.support import (
    STARTED,
    build_config,
    config_flags,
    check_config,
    fail,
    interrupts_quietly,
    preload,
    progress_handler,
    quiet,
    ui_hint,
    user_errors,
)


def register(app: typer.Typer) -> None:
    """Add ``train`` to the ``attnlab`` app."""
    app.command()(train)


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
    loggers = [logging.getLogger(name) for name in ("prefect.task_runs", "prefect.flow_runs", "prefect.flow_engine", "prefect.task_engine", "mlflow.store.db.utils")]
    for logger in loggers:
        logger.addFilter(noise)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(noise)


def check_start(config, experiment: str | None, device: bool = True) -> None:
    """What cannot be told from the config alone, before anything starts: an experiment name
    that is not a safe folder name and (with ``device``) a device this machine lacks."""
    import torch

    from attnlab.lab.config import device_problem
    from attnlab.flows.tracking.errors import UserError
    from attnlab.lab.names import check_name

    if experiment is not None:
        check_name(experiment)
    problem = device_problem(config.device, torch.cuda.device_count()) if device else None
    if problem:
        raise UserError(problem)


def attention_lines(metrics: dict[str, float]) -> list[str]:
    """The summary's lines on the alignment measures and the erasure tests (``test_*`` metrics),
    each only when its metrics are there (a scorer that does not attend has neither)."""
    lines = []
    if "test_alignment_offset_mode" in metrics:
        lines.append(
            f"alignment: within one {metrics['test_alignment_within_one']:.4f}  "
            f"offset mode {metrics['test_alignment_offset_mode']:+.0f}  "
            f"shifted by the mode {metrics['test_alignment_shifted_accuracy']:.4f}  "
            f"error rate (AER) {metrics['test_alignment_error_rate']:.4f}"
        )
    probes = [p for p in ("top", "random", "gold") if f"test_erasure_flip_{p}" in metrics]
    if probes:
        flips = "  ".join(f"{p} {metrics[f'test_erasure_flip_{p}']:.4f}" for p in probes)
        drops = "  ".join(f"{p} {metrics[f'test_erasure_drop_{p}']:.4f}" for p in probes)
        examples = metrics.get("test_erasure_examples")
        sample = f" ({examples:.0f} test examples)" if examples is not None else ""
        lines.append(f"erasure{sample}: flip rate {flips};  probability drop {drops}")
    return lines


def format_summary(summary: dict[str, Any]) -> str:
    """The human summary of a train run (the JSON summary's main fields)."""
    metrics = summary["metrics"]
    names = ("exact_match", "char_accuracy", "alignment_accuracy", "attention_entropy")
    shown = "  ".join(f"{name} {metrics['test_' + name]:.4f}" for name in names if "test_" + name in metrics)
    model = summary["model"]
    decision = model.get("decision")
    if decision is None:
        verdict = "registered, not promoted"
    elif decision.get("champion_unusable"):
        verdict = f"not promoted: version {model['champion_version']} holds the alias but cannot be loaded (see the error line)"
    elif model["champion"]:
        verdict = f"new champion: {decision['reason']}"
    else:
        holder = f"version {model['champion_version']} keeps the alias" if model["champion_version"] else "no champion"
        verdict = f"not champion ({holder}): {decision['reason']}"
    benchmark = summary["model"].get("benchmark")
    where = f" on the benchmark ({benchmark['size']} examples, run {benchmark['run_id']})" if benchmark else ""
    early = ", stopped early" if summary["stopped_early"] else ""
    return "\n".join(
        [
            f"run {summary['run_id']} FINISHED in experiment {summary['experiment']}: "
            f"{summary['epochs']} epoch(s), {summary['train_seconds']:.1f} s training{early}",
            f"test:  {shown}",
            *attention_lines(metrics),
            f"model: {model['name']} version {model['version']} ({model['uri']})",
            f"promotion{where}: {verdict}",
            f"open the MLflow UI: {summary['ui']}",
        ]
    )


def train(
    task: Task = None,
    scorer: Scorer = None,
    encoder: Encoder = None,
    decoder: Decoder = None,
    epochs: Epochs = None,
    seed: Seed = None,
    embedding_dim: EmbeddingDim = None,
    hidden_size: HiddenSize = None,
    train_size: TrainSize = None,
    batch_size: BatchSize = None,
    learning_rate: LearningRate = None,
    beam_size: BeamSize = None,
    device: Device = None,
    config_file: ConfigFile = None,
    option: ConfigOptions = [],
    experiment: Experiment = None,
    json_output: JsonOutput = False,
    verbose: Verbose = False,
) -> None:
    """Train, evaluate, plot and register a model (the Prefect train flow), then summarise.

    A config key takes the last value given by: its default, a YAML file (--config), the flags
    below, -o KEY=VALUE (repeatable; VALUE is read as YAML: 4, 0.1, true, [a, b]).

    \b
    -o KEY=VALUE sets any config key:
      task, task_options, test_task_options, scorer, scorer_options, encoder,
      encoder_options, decoder, decoder_options, embedding_dim, hidden_size,
      train_size, validation_size, test_size, epochs, batch_size,
      length_bucketing, learning_rate, lr_schedule, compile_loops, clip_norm,
      teacher_forcing, target_exact_match, beam_size, seed, device

    -o GROUP.NAME=VALUE sets option NAME of the chosen plugin of GROUP (task, scorer, encoder,
    decoder; test_task: task options for the test split only), e.g. -o scorer.heads=8 is
    scorer_options: {heads: 8} in a YAML file. 'attnlab plugins' lists every plugin's options
    with their defaults and types.
    """
    quiet(verbose)
    flags = config_flags(locals())
    with user_errors():
        summary = run_training(config_file, flags, option, experiment, verbose, json_output)
    if json_output:
        typer.echo(json.dumps(summary, default=str, ensure_ascii=False))
    else:
        typer.echo(format_summary(summary))
    problem = unusable_champion(summary)
    if problem:
        raise fail(problem, 1)


def unusable_champion(summary: dict[str, Any]) -> str | None:
    """The error line of a run whose promotion found the champion unusable, or None."""
    model = summary["model"]
    why = (model.get("decision") or {}).get("champion_unusable")
    if not why:
        return None
    return (
        f"the champion of {model['name']} (version {model['champion_version']}) cannot be loaded: {why}; "
        f"version {model['version']} was registered but not promoted; repair the champion, or in the MLflow UI "
        f"(Models > {model['name']}) move the alias 'champion' to a usable version or delete it"
    )

def run_training(
    config_file: Path | None,
    flags: dict[str, Any],
    options: list[str],
    experiment: str | None,
    verbose: bool = False,
    json_output: bool = False,
) -> dict[str, Any]:
    """Validate everything a user gave, check MLflow, run the train flow; its summary with the
    wall-time split under ``timings``. Prefect's server boots while the rest starts up. Progress
    goes to stderr: a bar inside epochs on a terminal, plain lines otherwise or with
    ``json_output``."""
    from attnlab.training.timing import Stopwatch

    watch = Stopwatch(imports=time.perf_counter() - STARTED)
    with watch("check"):
        config = build_config(config_file, flags, options)  # a bad value is refused before anything starts
    with watch("prefect_start"):
        from attnlab.flows.services.prefect_server import start_in_background, without_heartbeats

        server = start_in_background()  # boots while torch, MLflow and Prefect are imported here
    with watch("check"):
        check_start(config, experiment)
        check_config(config)
        from attnlab.flows.tracking.store import check_store, resolve_store

        store = resolve_store()
        check_store(store)  # an unreachable server is reported before training
    with watch("imports"):
        from attnlab.ops.faults import causes
        from attnlab.flows.services import prefect_watch
        from attnlab.flows.tracking.errors import UserError
        from attnlab.flows.train_flow import train_flow
        from attnlab.training.loop import TrainingDiverged

        if server is not None:
            preload()
    with watch("prefect_start"):
        if server is not None and not server.wait():
            server = None  # Prefect has an API URL of its own
    typer.echo(
        f"training {config.scorer}/{config.encoder}/{config.decoder} on {config.task} "
        f"({config.train_size}/{config.validation_size}/{config.test_size} examples, up to "
        f"{config.epochs} epochs); tracking: {store.tracking_uri}",
        err=True,
    )
    if config.compile_loops:
        typer.echo("compile_loops: the first batches compile the GRU loops (tens of seconds)", err=True)
    handler = progress_handler(steps=True, json_output=json_output)
    try:
        with watch("flow"), interrupts_quietly(), failures_quietly(verbose), without_heartbeats() if server is not None else nullcontext():
            with prefect_watch.watching(server.process if server is not None else None, verbose):
                summary = train_flow(config=config, experiment=experiment)
    except TrainingDiverged as exc:
        raise fail(f"training diverged: {exc}", 1) from None
    except Exception as exc:
        fault = next((cause for cause in causes(exc) if isinstance(cause, UserError)), None)
        if fault is None or fault is exc:
            raise
        raise fail(str(fault)) from None  # Prefect failed to report it to a server that is gone
    except KeyboardInterrupt:
        raise fail(
            "interrupted: the MLflow run ended KILLED with its metrics so far and the last "
            "checkpoint; the champion is unchanged",
            130,
        ) from None
    finally:
        logging.getLogger("attnlab.progress").removeHandler(handler)
        logging.getLogger("attnlab.training.progress.steps").setLevel(logging.NOTSET)
        handler.close()
    watch.seconds["total"] = time.perf_counter() - STARTED
    summary["ui"] = ui_hint(store)
    summary["timings"] = {
        **{key: round(value, 2) for key, value in watch.seconds.items()},
        "steps": summary.pop("step_seconds", {}),
    }
    return summary
