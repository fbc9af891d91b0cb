"""The train flow: generate data -> train -> evaluate -> plot attention -> log and register.

One MLflow run per flow run. The run ends FINISHED, FAILED (an error) or KILLED (Ctrl-C or a
termination signal), never stays RUNNING, and keeps what it logged; when interrupted it also gets
the last checkpoint as an artifact. The champion alias moves only after a successful run, and
only to a better model.
"""

from __future__ import annotations

import json
import shutil
import signal
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from mlflow import MlflowClient
from prefect import flow
from prefect.runtime import flow_run

from attnlab.config import ExperimentConfig
from attnlab.flows import tasks, tracking
from attnlab.plugins import describe_plugins


@contextmanager
def _no_sigint() -> Iterator[None]:
    """Ignore Ctrl-C while a run is being closed, so a second one cannot leave it RUNNING."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _plugin_version(task: str) -> str:
    """'<distribution> <version>' of the task plugin (part of the data cache key)."""
    return next((info.distribution for info in describe_plugins("tasks") if info.name == task), "unknown")


@flow(
    name="attnlab-train",
    description="Train, evaluate and plot one attention model; log it to MLflow and register it.",
)
def train_flow(
    config: ExperimentConfig = ExperimentConfig(),
    experiment: str | None = None,
    register_model: bool = True,
    promote: bool = True,
    parent_run_id: str | None = None,
    probe: list[str] | None = None,
) -> dict[str, Any]:
    """Run one experiment end to end and return its summary (JSON-ready).

    ``experiment`` defaults to ``attnlab-<task>``. The model is logged to the run and, when
    ``register_model``, registered as ``attnlab-<task>``; ``promote`` then lets it take the champion
    alias if it beats the champion. ``parent_run_id`` makes the run a child of that MLflow run.
    ``probe`` is a ``[source, target]`` pair plotted first, its attention returned as ``probe``.
    """
    experiment = experiment or tracking.experiment_name(config.task)
    tags = {"prefect.flow_run_id": str(flow_run.id or ""), "prefect.flow_run_name": str(flow_run.name or "")}
    if parent_run_id:
        tags["mlflow.parentRunId"] = parent_run_id
    seconds: dict[str, float] = {}
    with _timed(seconds, "start_run"):
        run_id = tasks.start_run(config, experiment, tags)
    workdir = Path(tempfile.mkdtemp(prefix="attnlab-run-"))
    try:
        summary = _steps(config, run_id, workdir, seconds, register_model and promote, register_model, probe)
        with _no_sigint():
            tracking.end_run(MlflowClient(), run_id, "FINISHED")
    except BaseException as exc:
        interrupted = isinstance(exc, (KeyboardInterrupt, SystemExit)) or type(exc).__name__ == "TerminationSignal"
        with _no_sigint():
            tracking.end_run(
                MlflowClient(),
                run_id,
                "KILLED" if interrupted else "FAILED",
                error=f"{type(exc).__name__}: {exc}",
                checkpoint=workdir / "checkpoint.pt" if interrupted else None,
            )
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    store = tracking.resolve_store()
    return {
        "run_id": run_id,
        "experiment": experiment,
        "tracking_uri": store.tracking_uri,
        "status": "FINISHED",
        **summary,
        "prefect_flow_run_id": tags["prefect.flow_run_id"],
        "step_seconds": seconds,
    }


def dataset(config: ExperimentConfig) -> Path:
    """The data file of ``config`` (generated, or cached on its inputs). A cached path whose file
    was deleted since is generated again."""
    inputs = (tasks.data_spec(config), _plugin_version(config.task))
    data = tasks.generate_data(*inputs)
    if not data.exists():
        data = tasks.generate_data.with_options(refresh_cache=True)(*inputs)
    return data


@contextmanager
def _timed(seconds: dict[str, float], step: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        seconds[step] = round(seconds.get(step, 0.0) + time.perf_counter() - started, 3)


def _steps(
    config: ExperimentConfig,
    run_id: str,
    workdir: Path,
    seconds: dict[str, float],
    promote: bool,
    register: bool,
    probe: list[str] | None,
) -> dict[str, Any]:
    with _timed(seconds, "data"):
        data = dataset(config)
        tasks.log_dataset(run_id, config, data)
    with _timed(seconds, "train"):
        trained = tasks.train(config, data, run_id, workdir)
    with _timed(seconds, "evaluate"):
        evaluation = tasks.evaluate_bundle(trained.bundle, data, config.beam_size, str(config.torch_device()))
    with _timed(seconds, "plot"):
        sources, targets = tasks.pick_examples(evaluation)
        if probe:
            sources, targets = [probe[0], *sources], [probe[1], *targets]
        attention = tasks.plot_attention(trained.bundle, sources, targets, workdir / "attention")
    extra = {
        "epochs_trained": float(len(trained.history)),
        "stopped_early": float(trained.stopped_early),
        "train_seconds": trained.train_seconds,
        "parameters": float(trained.parameters),
    }
    score = float(evaluation.metrics[tracking.CHAMPION_METRIC.removeprefix("test_")])
    name = tracking.model_name(config.task)
    with _timed(seconds, "log"):
        tasks.log_results(run_id, evaluation, attention, extra)
    with _timed(seconds, "register"):
        examples = sources[:3] or evaluation.predictions["source"].head(1).tolist()
        model: dict[str, Any] = {"name": name, "version": None, "uri": None, "champion": False, "champion_version": None, "previous_champion": None}
        if register:
            version = tasks.register_model(run_id, trained.bundle, config, score, examples)
            model.update(version=version, uri=f"models:/{name}/{version}")
            if promote:
                promotion = tasks.promote_champion(name, version, score)
                model.update(
                    champion=promotion.champion, champion_version=promotion.champion_version, previous_champion=promotion.previous
                )
        else:
            model["uri"] = tasks.log_model(run_id, trained.bundle, config, examples)
    records = json.loads((attention / "weights.json").read_text())
    return {
        "config": {key: getattr(config, key) for key in ("task", "scorer", "encoder", "decoder", "seed")},
        "epochs": len(trained.history),
        "stopped_early": trained.stopped_early,
        "train_seconds": round(trained.train_seconds, 3),
        "parameters": trained.parameters,
        "final_epoch": trained.history[-1] if trained.history else {},
        "history": trained.history,
        "metrics": tracking.evaluation_metrics(evaluation),
        "by_length": _by_length(evaluation),
        "probe": records[0] if probe and records else None,
        "model": model,
    }


def _by_length(evaluation) -> list[dict[str, float]]:
    """Test exact match per source length (not bucketed): ``[{length, count, exact_match}]``."""
    grouped = evaluation.predictions.groupby("source_length")["correct"].agg(["size", "mean"])
    return [{"length": int(n), "count": int(row["size"]), "exact_match": float(row["mean"])} for n, row in grouped.iterrows()]
