"""Prefect tasks of a trained model's way into the registry: logging it, registering it as
``attnlab-<task>``, the benchmark it is scored on and the promotion by the one rule (see
:mod:`attnlab.flows.tracking.promote`). Each a thin wrapper around one tracking step, retried as
the logging steps of :mod:`attnlab.flows.run.steps` are.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from prefect import task

from attnlab.data.datasets import load_splits
from attnlab.evaluation.benchmark import overlap
from attnlab.flows.run.steps import LOGGING
from attnlab.flows.tracking import promote as promotion
from attnlab.flows.tracking import registry as model_registry
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking import store
from attnlab.flows.tracking.benchmark_store import Benchmark, ensure_benchmark, load_benchmark
from attnlab.flows.tracking.promotion_lock import promotion_lock
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_task
from attnlab.ops.promotion import Decision
from mlflow import MlflowClient


@task(name="register-model", **LOGGING)
def register_model(
    run_id: str, bundle: Path, config: ExperimentConfig, test_score: float, examples: list[str], tags: dict[str, str] | None = None
) -> str:
    """Log the pyfunc model and register it under ``config.registered_model()`` with ``tags`` besides its own; the new version."""
    return model_registry.log_and_register_model(MlflowClient(), run_id, bundle, config, test_score, examples, tags)


@task(name="log-model", **LOGGING)
def log_model(run_id: str, bundle: Path, config: ExperimentConfig, examples: list[str]) -> str:
    """Log the pyfunc model of the run without registering it; its model URI."""
    return model_registry.log_model(MlflowClient(), run_id, bundle, config, examples)[0]


@task(name="prepare-benchmark", **LOGGING)
def prepare_benchmark(config: ExperimentConfig, experiment: str, size: int, folder: Path) -> Benchmark:
    """The benchmark of the config's registered model (drawn from ``config`` by its first
    promotion), downloaded to ``folder``."""
    client = MlflowClient()
    experiment_id = tracking.ensure_experiment(client, experiment, store.resolve_store())
    name = config.registered_model()
    return ensure_benchmark(client, name, experiment_id, config, size, folder, lock=promotion_lock(name))


@task(name="benchmark-keys", **LOGGING)
def benchmark_keys(config: ExperimentConfig) -> tuple[str, list[str]] | None:
    """The digest and the keys (by the task's :meth:`~attnlab.plugins.Task.key`) of the benchmark
    the config's registered model already has, which a run registered there must not train on;
    None when it has none yet (its first promotion draws it)."""
    client = MlflowClient()
    with tempfile.TemporaryDirectory(prefix="attnlab-benchmark-") as folder:
        found = load_benchmark(client, config.registered_model(), Path(folder))
        return None if found is None else excluded_keys(found, config)


def excluded_keys(benchmark: Benchmark, config: ExperimentConfig) -> tuple[str, list[str]]:
    """The digest and the sorted keys (by the task's :meth:`~attnlab.plugins.Task.key`) of
    ``benchmark``'s examples, read from its local copy: what a run of ``config`` leaves out."""
    key = build_task(config).key
    return benchmark.sha256, sorted({key(example) for example in benchmark.read().examples})


@task(name="benchmark-overlap", **LOGGING)
def benchmark_overlap(run_id: str, config: ExperimentConfig, benchmark: Benchmark, data: Path) -> float:
    """The share of benchmark examples in the run's training and validation data (metric
    ``benchmark_overlap``; the task's key decides sameness)."""
    splits = load_splits(data)
    share = overlap(benchmark.read().examples, splits.train + splits.validation, build_task(config).key)
    MlflowClient().log_metric(run_id, "benchmark_overlap", share)
    return share


@task(name="promote", **LOGGING)
def promote(
    name: str, version: str, config: ExperimentConfig, benchmark: Benchmark, margin: float, run_id: str | None, command: str
) -> Decision:
    """Score challenger and champion on the benchmark, move the alias if the challenger wins and
    record the decision (see :mod:`attnlab.flows.tracking.promote`)."""
    client = MlflowClient()
    decision = promotion.promote(client, name, version, config, benchmark, margin, lambda: promotion_lock(name))
    promotion.record_decision(client, run_id, name, decision, benchmark, command)
    return decision
