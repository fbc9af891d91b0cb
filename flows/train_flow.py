"""The train flow: generate data -> train -> evaluate -> plot attention -> log and register.

One MLflow run per flow run. The run ends FINISHED, FAILED (an error) or KILLED (Ctrl-C or a
termination signal) and keeps what it logged; when interrupted it also gets the last checkpoint
as an artifact. When the tracking server is lost the run cannot be ended: the flow stops with
:class:`~attnlab.flows.tracking.errors.TrackingLost` (one line naming the server and where the last
checkpoint is kept on local disk), and the next train flow against that store ends the run
FAILED, as it ends every run left RUNNING by a process that is gone (SIGKILL, a crash). The
champion alias moves only after a successful run, and only by the one promotion rule
(:mod:`attnlab.ops.promotion`): challenger and champion scored on the registered model's benchmark
set.
"""

from __future__ import annotations

import json
import logging
import shutil
import signal
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from mlflow import MlflowClient
from prefect import flow

from attnlab.evaluation.benchmark import DEFAULT_SIZE
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.names import experiment_name, model_name
from attnlab.data.datasets import data_spec
from attnlab.data.examples import EXAMPLE_PLOTS, pick_examples
from attnlab.ops.faults import Surroundings, diagnose, fault_line
from attnlab.flows.services import prefect_watch
from attnlab.flows.tracking import promote as promotion
from attnlab.flows.tracking import store
from attnlab.flows import steps as tasks
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking.errors import RunFault, TrackingLost
from attnlab.flows.flow_runs import ending_status, flow_run_tags, is_interrupt
from attnlab.plugins import describe_plugins
from attnlab.training.timing import Stopwatch


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
    probe_gold: list[list[int]] | None = None,
    margin: float = 0.0,
    benchmark_size: int = DEFAULT_SIZE,
    command: str = "train",
    compare: list[str] | None = None,
    log_model: bool = True,
    example_plots: bool = True,
) -> dict[str, Any]:
    """Run one experiment end to end and return its summary (JSON-ready).

    ``experiment`` defaults to ``attnlab-<task>``. The model is logged to the run and, when
    ``register_model``, registered as ``attnlab-<task>``; ``promote`` then scores it and the
    champion on the registered model's benchmark (``benchmark_size`` examples drawn by the first
    promotion) and gives it the alias when it wins by more than ``margin``. ``parent_run_id``
    makes the run a child of that MLflow run, which then holds its data splits (once per distinct
    data set, see :func:`attnlab.flows.tracking.runs.log_dataset`). ``probe`` is a ``[source, target]``
    pair plotted first, its attention returned as ``probe``; ``probe_gold`` its gold alignment, for
    a probe that is not in this run's test split (a sweep draws one probe from one seed's data).
    ``compare`` are sources whose explorer examples (:func:`attnlab.viz.explorer_data.model_views`) the
    summary returns as ``compared`` (a sweep's parent page shows every run on the same inputs).
    ``command`` names the promoting command in the decision's records. ``log_model=False`` (a sweep run by default) logs no model unless it is
    registered: the run keeps its metrics, tables and figures; ``model.uri`` is then None.
    ``example_plots=False`` (a sweep run by default) draws the probe's heatmap only, not those of
    the test examples picked by :func:`attnlab.data.examples.pick_examples` (``explorer.html`` shows
    every test example's attention either way).
    """
    experiment = experiment or experiment_name(config.task)
    tags = flow_run_tags()
    if parent_run_id:
        tags["mlflow.parentRunId"] = parent_run_id
    watch = Stopwatch()
    with watch("start_run"):
        run_id = tasks.start_run(config, experiment, tags)
    workdir = Path(tempfile.mkdtemp(prefix="attnlab-run-"))
    checkpoint = tasks.checkpoint_path(run_id)
    artifacts = store.folder_identity(store.resolve_store().artifact_root)
    kept = False
    try:
        end_stale_runs()
        promotion_settings = (margin, benchmark_size, experiment, command) if register_model and promote else None
        summary = _steps(config, run_id, workdir, watch, promotion_settings, register_model, probe, probe_gold, compare, log_model, parent_run_id, example_plots, artifacts)
        with _no_sigint():
            tracking.end_run(MlflowClient(), run_id, "FINISHED")
    except BaseException as exc:
        where = store.resolve_store()
        why = store.unreachable(where)  # one quick try: a lost server is not retried again
        if why is not None:
            kept = checkpoint.exists()
            message = lost_message(where.tracking_uri, why, run_id, checkpoint if kept else None, is_interrupt(exc))
            raise TrackingLost(message) from exc
        fault = diagnose(exc, surroundings(where, workdir, checkpoint, artifacts))
        if fault is not None and not is_interrupt(exc):
            with _no_sigint():
                ended = end_failed(run_id, fault.lost)
            kept = checkpoint.exists()
            raise RunFault(fault_line(fault, run_id, ended, str(checkpoint) if kept else None)) from exc
        with _no_sigint():
            tracking.end_run(
                MlflowClient(),
                run_id,
                ending_status(exc),
                error=f"{type(exc).__name__}: {exc}",
                checkpoint=checkpoint if is_interrupt(exc) else None,
            )
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if not kept:
            shutil.rmtree(checkpoint.parent, ignore_errors=True)
    return {
        "run_id": run_id,
        "experiment": experiment,
        "tracking_uri": store.resolve_store().tracking_uri,
        "status": "FINISHED",
        **summary,
        "prefect_flow_run_id": tags["prefect.flow_run_id"],
        "step_seconds": watch.rounded(),
    }


def end_stale_runs() -> None:
    """End FAILED the runs of this store left RUNNING by a process that is gone (one line each on
    the progress logger). Housekeeping: a failure here never stops the run."""
    try:
        ended = tracking.end_stale_runs(MlflowClient())
    except Exception:  # noqa: BLE001
        return
    for stale, why in ended:
        logging.getLogger("attnlab.progress").info(f"run {stale} was left RUNNING ({why}): ended it FAILED")


def surroundings(where: store.Store, workdir: Path, checkpoint: Path, artifacts: tuple[int, int] | None) -> Surroundings:
    """What :func:`attnlab.ops.faults.diagnose` needs to know of a run that stopped: the free space of
    the folders it writes to, whether the store's artifacts folder (``artifacts``: its identity
    when the run started) was deleted since, whether Prefect's server was lost."""
    folders = [workdir, checkpoint.parent, *([where.folder] if where.embedded else [])]
    free = {}
    for folder in folders:
        existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
        if existing is not None:
            free[str(folder)] = shutil.disk_usage(existing).free
    root = str(where.artifact_root) if where.embedded and artifacts is not None else None
    return Surroundings(free, root, store.artifact_root_lost(artifacts), prefect_watch.lost())


def end_failed(run_id: str, why: str) -> bool:
    """End run ``run_id`` FAILED with ``why``; False when even that cannot be written (a full
    disk): the next ``attnlab train`` ends it, as it ends a run whose process is gone."""
    try:
        tracking.end_run(MlflowClient(), run_id, "FAILED", error=why)
    except Exception:  # noqa: BLE001  the store shares the fault; the caller says the run stays RUNNING
        return False
    return True


def lost_message(uri: str, why: str, run_id: str, checkpoint: Path | None, interrupted: bool) -> str:
    """The one line that ends a run whose tracking server stopped answering."""
    kept = f"the last checkpoint is kept at {checkpoint}" if checkpoint else "no checkpoint was written yet"
    return (
        f"{'interrupted, and ' if interrupted else ''}lost the MLflow tracking server {uri} ({why}); "
        f"{kept}; run {run_id} stays RUNNING until the next 'attnlab train' against that server ends it FAILED"
    )


def dataset(config: ExperimentConfig) -> Path:
    """The data file of ``config`` (generated, or kept from an earlier run on the same inputs)."""
    return tasks.generate_data(data_spec(config), _plugin_version(config.task))


def _steps(
    config: ExperimentConfig,
    run_id: str,
    workdir: Path,
    watch: Stopwatch,
    promotion_settings: tuple[float, int, str, str] | None,
    register: bool,
    probe: list[str] | None,
    probe_gold: list[list[int]] | None,
    compare: list[str] | None,
    log_model: bool = True,
    parent_run_id: str | None = None,
    example_plots: bool = True,
    artifacts: tuple[int, int] | None = None,
) -> dict[str, Any]:
    watch = _checked(watch, artifacts)
    with watch("data"):
        data = dataset(config)
        tasks.log_dataset(run_id, config, data, parent_run_id)  # a sweep's runs share their splits
    with watch("train"):
        trained = tasks.train(config, data, run_id, workdir)
    with watch("evaluate"):
        evaluation = tasks.evaluate_bundle(trained.bundle, data, config.beam_size, str(config.torch_device()))
    with watch("plot"):
        sources, targets = pick_examples(evaluation.predictions, count=EXAMPLE_PLOTS if example_plots else 0)
        golds = [None] * len(sources)
        if probe:
            sources, targets, golds = [probe[0], *sources], [probe[1], *targets], [probe_gold, *golds]
        attention = tasks.plot_attention(trained.bundle, sources, targets, workdir / "attention", data, golds)
        plots = tasks.plot_alignment_offsets(evaluation.alignment_offsets, workdir / "plots")
    with watch("explorer"):
        greedy = evaluation.predictions["correct"].tolist() if config.beam_size == 1 else None  # else decoded again
        explored = tasks.explore_attention(run_id, trained.bundle, data, evaluation.metrics, trained.snapshots, attention, compare, greedy)
    extra = {
        "epochs_trained": float(len(trained.history)),
        "stopped_early": float(trained.stopped_early),
        "train_seconds": trained.train_seconds,
        "parameters": float(trained.parameters),
    }
    with watch("log"):
        tasks.log_results(run_id, evaluation, attention, extra, plots)
    examples = sources[:3] or evaluation.predictions["source"].head(1).tolist()
    with watch("register"):
        if register:
            test_score = float(evaluation.metrics["exact_match"])
            version = tasks.register_model(run_id, trained.bundle, config, test_score, examples)
            model = registered(config.task, version)
        else:
            uri = tasks.log_model(run_id, trained.bundle, config, examples) if log_model else None
            model = {**registered(config.task, None), "uri": uri}
    if promotion_settings is not None:
        with watch("promote"):
            model.update(promote_version(config, model["version"], run_id, data, *promotion_settings))
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
        **({"compared": explored.compared} if compare else {}),
    }


def _checked(watch: Stopwatch, artifacts: tuple[int, int] | None):
    """``watch``'s sections, each entered only while Prefect's server still answers and the
    store's artifacts folder is the one it was (``artifacts``: its identity)."""

    def section(name: str):
        prefect_watch.check()
        store.check_artifact_root(artifacts)
        return watch(name)

    return section


def registered(task: str, version: str | None) -> dict[str, Any]:
    """The summary's ``model`` entry before any promotion."""
    name = model_name(task)
    uri = None if version is None else f"models:/{name}/{version}"
    return {"name": name, "version": version, "uri": uri, "champion": False, "champion_version": None, "previous_champion": None, "decision": None}


def promote_version(
    config: ExperimentConfig, version: str, run_id: str, data: Path, margin: float, benchmark_size: int, experiment: str, command: str
) -> dict[str, Any]:
    """Promote registered ``version`` by the one rule, the decision recorded on ``run_id``; the
    summary's fields about it (``champion``, ``champion_version``, ``previous_champion``,
    ``decision``, ``benchmark``)."""
    name = model_name(config.task)
    folder = promotion.scratch_folder()
    try:
        benchmark = tasks.prepare_benchmark(config, experiment, benchmark_size, folder)
        share = tasks.benchmark_overlap(run_id, config, benchmark, data)
        decision = tasks.promote(name, version, config, benchmark, margin, run_id, command)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    holder = version if decision.promoted else decision.champion_version
    previous = None
    if decision.champion_version is not None and decision.champion_version != version:
        previous = {"version": decision.champion_version, "benchmark_score": decision.champion_score}
    return {
        "champion": decision.promoted,
        "champion_version": holder,
        "previous_champion": previous,
        "decision": decision.as_dict(),
        "benchmark": {"run_id": benchmark.run_id, "size": benchmark.size, "overlap": share},
    }


def _by_length(evaluation) -> list[dict[str, float]]:
    """Test exact match per source length (not bucketed): ``[{length, count, exact_match}]``."""
    grouped = evaluation.predictions.groupby("source_length")["correct"].agg(["size", "mean"])
    return [{"length": int(n), "count": int(row["size"]), "exact_match": float(row["mean"])} for n, row in grouped.iterrows()]
