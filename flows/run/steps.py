"""Prefect tasks: each a thin wrapper around one component call or one tracking step.

Tasks pass paths, ids and small objects (configs, metric dicts, a few strings): the data travels
as the path of a JSON file and a trained model as the path of its bundle folder. (Prefect walks
every task input looking for futures: thousands of examples passed by value cost ~0.25 s a task.)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypedDict

import pandas as pd
from prefect import Task, task
from prefect.cache_policies import NO_CACHE, CachePolicy
from prefect.client.schemas.objects import State, TaskRun

from attnlab.data.cache import cache_root
from attnlab.data.data_key import data_file_name, data_key, task_plugin_version
from attnlab.data.datasets import data_spec, entry_problem, load_splits, save_splits
from attnlab.data.examples import gold_alignments
from attnlab.evaluation.example_records import Gold, attention_record, heatmap_title, merged_golds
from attnlab.evaluation.metrics import Evaluation, with_references
from attnlab.flows.run import epoch_hooks
from attnlab.flows.run.store_writes import tracked_write
from attnlab.flows.services import prefect_watch
from attnlab.flows.tracking import run_data, store
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking.step_log import StepLog
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_task
from attnlab.model.bundle import load_bundle, save_bundle
from attnlab.model.predictor import Predictor
from attnlab.model.task_choice import build_tasks
from attnlab.ops import retry
from attnlab.training.experiment import prepare_data, train_model
from attnlab.training.progress import PROGRESS_LOGGER, StepProgress, epoch_line
from attnlab.viz.alignment_plots import offset_chart, training_chart
from attnlab.viz.explorer import write_explorer
from attnlab.viz.explorer_data import (
    CURVE_EXAMPLES,
    PROBE_EXAMPLES,
    SnapshotRecorder,
    describe,
    model_views,
    run_document,
)
from attnlab.viz.explorer_views import explained_on_page
from attnlab.viz.heatmaps import attention_heatmap, head_heatmaps, save_figure
from mlflow import MlflowClient

#: One line per epoch goes to this logger; the CLI prints it, other callers may attach handlers.
progress = logging.getLogger(PROGRESS_LOGGER)
#: Every optimisation step goes to this logger at DEBUG, the StepProgress as the record's
#: ``step_progress`` (the CLI's progress bar and periodic lines read it).
step_progress = logging.getLogger(f"{PROGRESS_LOGGER}.steps")


def transient(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Prefect's retry condition: I/O and tracking-server hiccups, not mistakes or bugs (:func:`attnlab.ops.retry.transient`)."""
    return retry.transient(state.data if isinstance(state.data, BaseException) else None)


#: Keyword arguments of Prefect's ``@task`` (a TypedDict: mypy checks each against its parameter).
class TaskOptions(TypedDict):
    retries: int
    retry_delay_seconds: list[float]
    retry_condition_fn: Callable[[Task[..., Any], TaskRun, State[Any]], bool]
    cache_policy: CachePolicy


LOGGING = TaskOptions(retries=2, retry_delay_seconds=[1, 5], retry_condition_fn=transient, cache_policy=NO_CACHE)


@task(name="start-run", **LOGGING)
def start_run(config: ExperimentConfig, experiment: str, tags: dict[str, str]) -> str:
    """Check the store, open a RUNNING MLflow run with params, tags and config; its id."""
    where, client = store.use_store(), MlflowClient()
    store.check_store(where)
    return tracking.start_run(client, tracking.ensure_experiment(client, experiment, where), config, tags)


def checkpoint_path(run_id: str) -> Path:
    """Where the training checkpoint of run ``run_id`` is written:
    ``<cache_root>/checkpoints/<run_id>/checkpoint.pt``. The train flow deletes it when the run
    ends, and keeps it when the tracking server was lost (the run could not store it)."""
    return cache_root() / "checkpoints" / run_id / "checkpoint.pt"


def cache_dir() -> Path:
    """Where generated datasets are kept: ``<cache_root>/datasets``."""
    return cache_root() / "datasets"


@task(name="generate-data", cache_policy=NO_CACHE)
def generate_data(spec: dict[str, Any], plugin: str, benchmark: list[str] | None = None) -> Path:
    """The train/validation/test splits of ``spec`` (see :func:`attnlab.data.datasets.data_spec`) as a JSON file in
    :func:`cache_dir`; its path. The file is named by a hash of these inputs
    (:func:`attnlab.data.data_key.data_file_name`) and generated once per machine; a file there
    that cannot stand for these inputs (:func:`attnlab.data.datasets.entry_problem`: cut short,
    changed, another key's, empty) is generated again, with one line on the progress logger. The
    cache is a file of this machine's cache folder, not a Prefect result record: a Dask worker on
    another machine keeps its own (Prefect would write its records under the submitting
    machine's PREFECT_HOME, which a worker does not have)."""
    path, key = cache_dir() / data_file_name(spec, plugin), data_key(spec, plugin)
    if path.exists():
        problem = entry_problem(path, key)
        if problem is None:
            return path
        progress.info(f"the data cache file {path} {problem}: generating the data again")
    fields = {name: value for name, value in spec.items() if name not in ("data_version", "benchmark")}
    return save_splits(path, prepare_data(ExperimentConfig(**fields), frozenset(benchmark or ()))[1], key)


def dataset(config: ExperimentConfig, benchmark: tuple[str, list[str]] | None = None) -> Path:
    """The data file of ``config`` (generated, or kept from an earlier run on the same inputs;
    a task that read a file keys it by the file's digest too). ``benchmark``: the digest and
    keys of the registered model's benchmark, which then never train (see
    :func:`attnlab.data.splits.make_splits`; the file is keyed by that digest too)."""
    spec = data_spec(config)
    version = build_task(config).data_version()
    if version is not None:
        spec["data_version"] = version
    if benchmark is not None:
        spec["benchmark"] = benchmark[0]
    return generate_data(spec, task_plugin_version(config.task), None if benchmark is None else benchmark[1])


@task(name="log-dataset", **LOGGING)
def log_dataset(run_id: str, config: ExperimentConfig, data: Path, shared_with: str | None = None) -> None:
    run_data.log_dataset(MlflowClient(), run_id, config, load_splits(data), shared_with)


@dataclass(frozen=True)
class Trained:
    """What training leaves behind: the bundle folder (the kept weights, see
    :mod:`attnlab.training.selection`), the per-epoch history, the attention snapshots recorded
    after every epoch (a JSON file; see :class:`~attnlab.viz.explorer_data.SnapshotRecorder`) and
    which weights were kept (:attr:`attnlab.training.loop.TrainResult.selected`)."""

    bundle: Path
    history: list[dict[str, float]]
    stopped_early: bool
    train_seconds: float
    parameters: int
    snapshots: Path | None = None
    selected: dict[str, float] | None = None


@task(name="train", cache_policy=NO_CACHE)
def train(config: ExperimentConfig, data: Path, run_id: str, workdir: Path) -> Trained:
    """Train, logging every epoch to the progress logger and to MLflow (step = epoch), every step
    to the step logger and the loss inside epochs as ``train_loss_step`` (see
    :mod:`attnlab.flows.tracking.step_log`); the model is saved as a bundle in ``workdir/bundle``, the
    checkpoint at :func:`checkpoint_path` after every epoch, the attention of the first
    validation examples before training, inside the first epoch and after every epoch in
    ``workdir/snapshots.json`` (the explorer's snapshots), with each the alignment curve point
    (metrics ``val_probe_*``, step = optimisation step; drawn as
    ``plots/alignment_over_training.png``). A tracking server that stops
    answering stops training at once with :class:`~attnlab.flows.tracking.errors.TrackingLost` (the run
    cannot be tracked any more)."""
    client, where = MlflowClient(), store.resolve_store()
    steps = StepLog(client, run_id)
    tracked = partial(tracked_write, where)
    splits = load_splits(data)
    checkpoint = checkpoint_path(run_id)
    fresh = not checkpoint.exists()  # a resumed run has no untrained model to show
    recorder = SnapshotRecorder(splits.validation[:PROBE_EXAMPLES], splits.validation[:CURVE_EXAMPLES], from_start=fresh)
    sent = 0  # points of recorder.curve logged

    def log_curve() -> None:
        nonlocal sent
        points, sent = recorder.curve[sent:], len(recorder.curve)
        tracked(lambda: tracking.log_curve(client, run_id, points))

    artifacts = store.folder_identity(where.artifact_root)

    def on_epoch(metrics: dict[str, float]) -> None:
        store.check_artifact_root(artifacts)
        progress.info(epoch_line(metrics, config.epochs))
        tracked(steps.flush)
        tracked(lambda: tracking.log_epoch(client, run_id, metrics))
        recorder.record(int(metrics["epoch"]))
        log_curve()
        epoch_hooks.notify(run_id, metrics)  # a tuned trial's pruner may stop it here

    def on_step(p: StepProgress) -> None:
        prefect_watch.check()
        if step_progress.isEnabledFor(logging.DEBUG):
            step_progress.debug("%s", p, extra={"step_progress": p})
        tracked(lambda: steps.add(p))
        if recorder.step(p):
            log_curve()

    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    task, test_task = build_tasks(config)
    model, result = train_model(config, task, splits, on_epoch, checkpoint, on_step, on_model=recorder.watch)
    bundle = save_bundle(workdir / "bundle", config, model, (task, test_task))
    parameters = sum(p.numel() for p in model.parameters())
    snapshots = workdir / "snapshots.json"
    snapshots.write_text(json.dumps(recorder.snapshots(), ensure_ascii=False))
    if recorder.curve:
        chart = save_figure(training_chart(recorder.curve, len(recorder.measured)), workdir / "curve" / "alignment_over_training.png")
        tracked(lambda: client.log_artifact(run_id, str(chart), "plots"))
    return Trained(bundle, result.history, result.stopped_early, result.train_seconds, parameters, snapshots, result.selected)


@task(name="plot-attention", cache_policy=NO_CACHE)
def plot_attention(
    bundle: Path, sources: list[str], targets: list[str], out_dir: Path, data: Path | None = None, golds: list[Gold | None] | None = None
) -> Path:
    """Heatmaps (PNG; one per head as well for a multi-head scorer) of the bundled model's
    attention on ``sources`` and ``weights.json`` with the raw weights, their tokens and the gold
    alignment (``gold``: the one given in ``golds``, else from the test split of the data file
    ``data``; null when unknown), which the heatmaps outline."""
    predictor = Predictor.load(bundle)  # test examples may be longer than training's
    found: list[Gold | None] = gold_alignments(load_splits(data).test, sources, targets) if data is not None else [None] * len(sources)
    golds = merged_golds(golds, found)
    out_dir.mkdir(parents=True, exist_ok=True)
    predictions = predictor.predict(sources)
    records = [attention_record(p, target, gold) for p, target, gold in zip(predictions, targets, golds)]
    for index, (p, target, gold) in enumerate(zip(predictions, targets, golds)):
        title = heatmap_title(p, target)
        if p.weights is not None:
            save_figure(attention_heatmap(p.weights, p.source_tokens, p.output_tokens, title, gold), out_dir / f"example_{index}.png")
        if p.head_weights is not None:
            figure = head_heatmaps(p.head_weights, p.source_tokens, p.output_tokens, title, gold)
            save_figure(figure, out_dir / f"example_{index}_heads.png")
    (out_dir / "weights.json").write_text(json.dumps(records, ensure_ascii=False))
    return out_dir


@dataclass(frozen=True)
class Explored:
    """The explorer page written, and the model's explorer examples of the sources it was asked
    to show besides (a sweep's parent page compares its runs on them; None when not asked)."""

    page: Path
    compared: list[dict[str, Any]] | None


@task(name="explore-attention", cache_policy=NO_CACHE)
def explore_attention(
    run_id: str, bundle: Path, data: Path, metrics: dict[str, float], snapshots: Path | None, out_dir: Path,
    compare: list[str] | None = None, correct: list[bool] | None = None,
) -> Explored:  # fmt: skip
    """``out_dir/explorer.html``: the attention explorer (:mod:`attnlab.viz.explorer`) of the bundled
    model on its test split, wrong examples first (:func:`attnlab.viz.explorer_data.run_document`;
    ``correct``: greedy decoding's verdict on each test example, when the evaluation has it),
    with the training's ``snapshots``; and, for ``compare``, the model's explorer examples of
    those sources. The page's first examples are explained by gradient attributions too
    (:func:`attnlab.viz.explorer_views.explained_on_page`)."""
    config, _, model = load_bundle(bundle)
    name = MlflowClient().get_run(run_id).info.run_name or run_id
    recorded = json.loads(snapshots.read_text()) if snapshots is not None else None
    tests = with_references(load_splits(data).test)[0]  # one per source, as the evaluation's verdicts
    explain = explained_on_page(config)
    document = run_document(
        model, tests, name, describe(config), metrics, recorded, correct=correct, explain=explain, steps=config.explain_steps
    )
    page = write_explorer(document, out_dir / "explorer.html")
    return Explored(page, model_views(model, compare) if compare else None)


@task(name="plot-alignment-offsets", cache_policy=NO_CACHE)
def plot_alignment_offsets(offsets: pd.DataFrame | None, out_dir: Path) -> Path | None:
    """``out_dir/alignment_offsets.png``, the bar chart of the evaluation's alignment offsets
    (:func:`attnlab.viz.alignment_plots.offset_chart`); ``out_dir``, or None when there are none
    (a scorer that does not attend, a task without alignments)."""
    if offsets is None or offsets.empty:
        return None
    save_figure(offset_chart(offsets), out_dir / "alignment_offsets.png")
    return out_dir


@task(name="log-results", **LOGGING)
def log_results(
    run_id: str, evaluation: Evaluation, attention_dir: Path, extra: dict[str, float], plots_dir: Path | None = None,
    tags: dict[str, str] | None = None,
) -> None:  # fmt: skip
    """Test metrics with the ``extra`` ones, ``tags``, tables, the attention folder (heatmaps,
    weights.json, explorer.html) and, when given, the figures folder (``plots/``) of the run."""
    client = MlflowClient()
    tracking.log_evaluation(client, run_id, evaluation, extra)
    for key, value in (tags or {}).items():
        client.set_tag(run_id, key, value)
    tracking.log_folder(client, run_id, attention_dir, "attention")
    if plots_dir is not None:
        tracking.log_folder(client, run_id, plots_dir, "plots")
