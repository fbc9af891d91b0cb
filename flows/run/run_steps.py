"""The steps of one train run inside its MLflow run: data, training, evaluation, the explanations'
measures (unless ``explain_examples`` is 0), figures, the explorer page, logging, the model
(logged, or registered and promoted by the one rule); and the run's summary. Each step is a
Prefect task of :mod:`attnlab.flows.run.steps`, :mod:`attnlab.flows.run.measure_steps` or
:mod:`attnlab.flows.run.model_steps`, timed by a
:class:`~attnlab.training.timing.Stopwatch` section that first checks Prefect's server and the
store's artifacts folder are still there.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from attnlab.evaluation.example_records import model_examples, plotted_examples
from attnlab.evaluation.metrics import with_explanations
from attnlab.flows.run import measure_steps, model_steps
from attnlab.flows.run import steps as tasks
from attnlab.flows.run.steps import Trained
from attnlab.flows.services import prefect_watch
from attnlab.flows.tracking import promote as promotion
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking import store
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.run_records import SELECTION_TAG
from attnlab.lab.run_summary import by_length, registered_model
from attnlab.lab.summaries import kept_weights
from attnlab.ops.promotion import promotion_summary
from attnlab.training.phase_lines import phase_lines
from attnlab.training.preflight import check_benchmark_fits
from attnlab.training.timing import Stopwatch

#: The config fields a summary names the run by.
NAMED_BY = ("task", "scorer", "encoder", "decoder", "seed")
#: The run's tag that says which weights it kept, and by which rule (``weights: ...`` in the summary).


class Promotion(NamedTuple):
    """How a registered version is promoted: the ``margin`` it must win by on a benchmark of
    ``benchmark_size`` examples (drawn by the model's first promotion) in ``experiment``;
    ``command`` names the promoting command in the decision's records."""

    margin: float
    benchmark_size: int
    experiment: str
    command: str


@dataclass(frozen=True)
class Plan:
    """What a train run does besides training (see :func:`attnlab.flows.run.train_flow.train_flow`)."""

    register: bool = True
    promotion: Promotion | None = None
    probe: list[str] | None = None
    probe_gold: list[list[int]] | None = None
    compare: list[str] | None = None
    log_model: bool = True
    parent_run_id: str | None = None
    example_plots: bool = True


def run_steps(
    config: ExperimentConfig, run_id: str, workdir: Path, watch: Stopwatch, plan: Plan, artifacts: tuple[int, int] | None
) -> dict[str, Any]:
    """Run every step of ``plan`` for run ``run_id`` (scratch files in ``workdir``); the summary's
    fields about what it trained, measured and registered."""
    section = checked(watch, artifacts)
    with section("data"):
        benchmark = model_steps.benchmark_keys(config) if plan.register else None
        drawn = plan.promotion.benchmark_size if plan.promotion else None  # by the first promotion
        size = len(benchmark[1]) if benchmark is not None else drawn
        if size is not None:
            check_benchmark_fits(config, size)
        if benchmark is not None:
            tasks.progress.info("benchmark of %s: its %d sources stay out of training and validation",
                                config.registered_model(), len(benchmark[1]))  # fmt: skip
        data = tasks.dataset(config, benchmark)
        tasks.log_dataset(run_id, config, data, plan.parent_run_id)  # a sweep's runs share their splits
    with section("train"):
        trained = tasks.train(config, data, run_id, workdir)
    with section("evaluate"):
        evaluation = measure_steps.evaluate_bundle(trained.bundle, data, config.beam_size, str(config.torch_device()))
    if config.explain_examples:
        with section("explain"):
            table = measure_steps.explain_bundle(
                trained.bundle, data, config.explain_examples, config.explain_steps, str(config.torch_device())
            )
            evaluation = with_explanations(evaluation, table)
    with section("plot"):
        plotted = plotted_examples(evaluation.predictions, plan.example_plots, plan.probe, plan.probe_gold)
        attention = tasks.plot_attention(trained.bundle, plotted.sources, plotted.targets, workdir / "attention", data, plotted.golds)
        plots = tasks.plot_alignment_offsets(evaluation.alignment_offsets, workdir / "plots")
    with section("explorer"):
        explored = tasks.explore_attention(
            run_id, trained.bundle, data, evaluation.metrics, trained.snapshots, attention, plan.compare, evaluation.greedy_correct
        )
    selection = selection_entry(config, trained)
    with section("log"):
        tasks.log_results(run_id, evaluation, attention, trained_metrics(trained), plots, {SELECTION_TAG: kept_weights(selection)})
    examples = model_examples(plotted.sources, evaluation.predictions)
    with section("register"):
        model = model_entry(config, run_id, trained, examples, plan, float(evaluation.metrics["exact_match"]))
    if plan.promotion is not None:
        with section("promote"):
            model.update(promote_version(config, model["version"], run_id, data, plan.promotion))
    records = json.loads((attention / "weights.json").read_text())
    return {
        "config": {key: getattr(config, key) for key in NAMED_BY},
        "epochs": len(trained.history),
        "stopped_early": trained.stopped_early,
        "train_seconds": round(trained.train_seconds, 3),
        "parameters": trained.parameters,
        "final_epoch": trained.history[-1] if trained.history else {},
        "history": trained.history,
        "selection": selection,
        "metrics": tracking.evaluation_metrics(evaluation),
        "by_length": by_length(evaluation.predictions),
        "probe": records[0] if plan.probe and records else None,
        "model": model,
        **({"compared": explored.compared} if plan.compare else {}),
    }


def trained_metrics(trained: Trained) -> dict[str, float]:
    """The training's own metrics, logged beside the test metrics: with which weights were kept
    (``selected_epoch``, ``averaged_epochs``, ``selected_val_exact_match``, ``selected_val_loss``)."""
    return {
        "epochs_trained": float(len(trained.history)),
        "stopped_early": float(trained.stopped_early),
        "train_seconds": trained.train_seconds,
        "parameters": float(trained.parameters),
        **(trained.selected or {}),
    }


def selection_entry(config: ExperimentConfig, trained: Trained) -> dict[str, Any]:
    """The summary's ``selection``: the rule asked for and the weights it kept
    (:func:`attnlab.lab.summaries.kept_weights` says it in words)."""
    return {
        "checkpoint": config.checkpoint,
        "average_last": config.average_last,
        "epochs": len(trained.history),
        **(trained.selected or {}),
    }


def model_entry(
    config: ExperimentConfig, run_id: str, trained: Trained, examples: list[str], plan: Plan, test_score: float
) -> dict[str, Any]:
    """The summary's ``model`` entry: the model registered (``plan.register``; its version tagged
    with the kept epoch), else logged (``plan.log_model``; ``uri`` None when not)."""
    bundle = trained.bundle
    if plan.register:
        tags = {"selected_epoch": str(int((trained.selected or {}).get("selected_epoch", len(trained.history))))}
        return registered_model(config.registered_model(), model_steps.register_model(run_id, bundle, config, test_score, examples, tags))
    uri = model_steps.log_model(run_id, bundle, config, examples) if plan.log_model else None
    return {**registered_model(config.registered_model(), None), "uri": uri}


def checked(watch: Stopwatch, artifacts: tuple[int, int] | None) -> Callable[[str], AbstractContextManager[None]]:
    """``watch``'s sections, each entered only while Prefect's server still answers and the
    store's artifacts folder is the one it was (``artifacts``: its identity); a long one says
    every so often that it is still going (:func:`attnlab.training.phase_lines.phase_lines`)."""

    @contextmanager
    def section(name: str) -> Iterator[None]:
        prefect_watch.check()
        store.check_artifact_root(artifacts)
        with watch(name), phase_lines(name, tasks.progress.info):
            yield

    return section


def promote_version(config: ExperimentConfig, version: str, run_id: str, data: Path, how: Promotion) -> dict[str, Any]:
    """Promote registered ``version`` by the one rule, the decision recorded on ``run_id``; the
    summary's fields about it (:func:`attnlab.ops.promotion.promotion_summary`)."""
    name = config.registered_model()
    folder = promotion.scratch_folder()
    try:
        benchmark = model_steps.prepare_benchmark(config, how.experiment, how.benchmark_size, folder)
        share = model_steps.benchmark_overlap(run_id, config, benchmark, data)
        decision = model_steps.promote(name, version, config, benchmark, how.margin, run_id, how.command)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return promotion_summary(decision, version, {"run_id": benchmark.run_id, "size": benchmark.size, "overlap": share})
