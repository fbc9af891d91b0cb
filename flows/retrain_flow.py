"""The retrain flow: fresh data -> train a challenger -> compare it with the champion on the fixed
benchmark set -> move the ``champion`` alias only when the challenger wins by the margin.

A task that reads its data from a file (``pairs``) retrains only when the file changed since the
champion was trained: on the champion's own data the retrain run ends FINISHED at once, tagged
``attnlab.retrain.skipped`` with the reason (:mod:`attnlab.ops.data_change`).

One MLflow run per retrain (``retrain-<task>``, tag ``attnlab.kind=retrain``) holds the decision;
the challenger's training run (the ``attnlab-train`` subflow) is its child. The run ends FINISHED,
or FAILED/KILLED with ``attnlab.error``; any failure before the decision leaves the alias where it
was, and the Prefect flow run ends Failed with the reason. A served deployment keeps serving.

The decision is the one every command makes (:mod:`attnlab.flows.tracking.promote`, under the same
per-model lock), recorded as ``promotion.*`` tags on the retrain run and the challenger's version. Then, under that
lock, versions beyond the newest ``keep`` are pruned (:mod:`attnlab.flows.tracking.prune`).

No ``from __future__ import annotations`` here: ``flow.serve`` pickles the flow function by value
into each run's process, and string annotations would then name types its globals lack.
"""

import contextlib
import secrets
import shutil
import uuid
from typing import Any

import torch
from mlflow.entities import Param
from prefect import flow, get_run_logger, task
from prefect.runtime import flow_run

from attnlab.evaluation.benchmark import DEFAULT_SIZE
from attnlab.flows import model_steps
from attnlab.flows import steps as tasks
from attnlab.flows.flow_runs import ending_status, flow_run_tags
from attnlab.flows.tracking import promote as promotion
from attnlab.flows.tracking import prune as retention
from attnlab.flows.tracking import registry, store
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking.benchmark_store import Benchmark
from attnlab.flows.tracking.promotion_lock import promotion_lock
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.names import experiment_name, model_name
from attnlab.ops.challenger import challenger_seed
from attnlab.ops.data_change import unchanged_reason
from attnlab.ops.promotion import Decision, check_margin
from attnlab.ops.retention import DEFAULT_KEEP, check_keep
from attnlab.training.threads import thread_share
from mlflow import MlflowClient

#: Benchmark examples drawn by a model's first promotion (later ones reuse that set).
BENCHMARK_SIZE = DEFAULT_SIZE
#: On a retrain run that did not train, why (the data is the champion's own).
SKIPPED_TAG = "attnlab.retrain.skipped"


def fresh_seed() -> int:
    """A new seed for each flow run: derived from its id (so the seed is on the run), else random."""
    run_id = flow_run.id
    return uuid.UUID(str(run_id)).int % 2**31 if run_id else secrets.randbelow(2**31)


@task(name="start-retrain-run", **tasks.LOGGING)
def start_retrain_run(task_name: str, experiment: str, tags: dict[str, str]) -> str:
    """Check the store and open the RUNNING retrain run (``retrain-<task>``); its id."""
    where = store.use_store()
    store.check_store(where)
    client = MlflowClient()
    experiment_id = tracking.ensure_experiment(client, experiment, where)
    tags = {"attnlab.kind": "retrain", "task": task_name, **tags}
    return client.create_run(experiment_id, run_name=f"retrain-{task_name}", tags=tags).info.run_id


@task(name="log-retrain-params", **tasks.LOGGING)
def log_retrain_params(run_id: str, config: ExperimentConfig, margin: float, benchmark: Benchmark, threads: int, keep: int) -> None:
    """The challenger's config (with its fresh seed), the comparison's and retention's settings as params."""
    params = {
        **tracking.config_params(config),
        "margin": repr(float(margin)),
        "keep": str(keep),
        "torch_threads": str(threads),
        "benchmark_run_id": benchmark.run_id,
        "benchmark_size": str(benchmark.size),
        "benchmark_seed": str(benchmark.seed),
    }
    MlflowClient().log_batch(run_id, params=[Param(k, v) for k, v in params.items()])


@task(name="prune-versions", **tasks.LOGGING)
def prune_versions(name: str, keep: int, run_id: str) -> list[str]:
    """Prune the registered model's versions beyond the newest ``keep`` (never the champion, the
    previous champion or an undecided version) under the promotion lock; record them on the
    retrain run. The pruned version numbers."""
    client = MlflowClient()
    with promotion_lock(name):
        pruned = retention.prune(client, name, keep)
    retention.record_pruning(client, run_id, name, pruned)
    return [entry["version"] for entry in pruned]


def settle(logger: Any, name: str, version: str, decision: Decision, keep: int, run_id: str) -> list[str]:
    """Tell the decision on ``version``, then prune the versions beyond the newest ``keep``
    (:func:`prune_versions`); the pruned version numbers."""
    logger.info("%s version %s %s: %s", name, version, "promoted to champion" if decision.promoted else "not promoted", decision.reason)
    pruned = prune_versions(name, keep, run_id)
    if pruned:
        logger.info("%s: pruned version%s %s (keeping the newest %d, the champion and the previous one)",
                    name, "s" * (len(pruned) > 1), ", ".join(pruned), keep)  # fmt: skip
    return pruned


def data_unchanged(config: ExperimentConfig, name: str) -> str | None:
    """Why this retrain need not train: the task's data (a file's digest) is what the champion of
    ``name`` was trained on (:func:`attnlab.ops.data_change.unchanged_reason`); None otherwise."""
    from attnlab.model.assembly import build_task

    current = build_task(config).data_version()
    if current is None:
        return None
    client = MlflowClient()
    champion = registry.champion_version(client, name)
    if champion is None:
        return None
    recorded = client.get_run(champion.run_id).data.tags.get(tracking.DATA_VERSION_TAG)
    return unchanged_reason(current, recorded, str(champion.version))


def end_failed(exc: BaseException, name: str, undecided: str | None, run_id: str) -> None:
    """End the retrain run that ``exc`` stopped FAILED or KILLED; record the failure on the
    ``undecided`` version (registered, no decision yet) when there is one. Best effort: the store
    may be what failed."""
    error = f"{type(exc).__name__}: {exc}"
    client = MlflowClient()
    with contextlib.suppress(Exception):
        if undecided is not None:
            promotion.record_failure(client, name, undecided, run_id, error)
    with contextlib.suppress(Exception):
        tracking.end_run(client, run_id, ending_status(exc), error=error)


def check_parameters(margin: float, benchmark_size: int, keep: int) -> None:
    """ValueError for a margin outside [0, 1), a benchmark of fewer than one example or a
    ``keep`` below two."""
    check_margin(margin)
    check_keep(keep)
    if benchmark_size < 1:
        raise ValueError(f"benchmark_size must be at least 1, got {benchmark_size}")


@flow(
    name="attnlab-retrain",
    description="Train a challenger on fresh data; promote it to champion only if it beats the champion "
    "on the fixed benchmark set by more than the margin.",
)
def retrain_flow(
    config: ExperimentConfig = ExperimentConfig(),
    margin: float = 0.0,
    benchmark_size: int = BENCHMARK_SIZE,
    seed: int | None = None,
    experiment: str | None = None,
    concurrent_runs: int = 1,
    keep: int = DEFAULT_KEEP,
) -> dict[str, Any]:
    """One retrain; its summary (JSON-ready): ``run_id`` (the retrain run), ``seed``, ``challenger``
    (the train flow's summary), ``decision`` (see promotion.Decision), ``benchmark`` (run id, size),
    ``benchmark_overlap`` and ``pruned`` (version numbers).

    ``config`` is the base config; its seed is replaced by ``seed`` or, by default, a fresh one
    derived from the flow run's id. ``margin``: the exact-match difference on the benchmark the
    challenger must exceed (0: strictly better). ``benchmark_size`` applies when the registered
    model has no benchmark yet. ``experiment`` defaults to ``attnlab-<task>``. ``concurrent_runs``:
    runs of the deployment at once on this machine (each takes that share of its cores for torch's
    threads). ``keep``: versions kept after the promotion (:mod:`attnlab.ops.retention`; at least 2).
    """
    from attnlab.flows.train_flow import train_flow  # by import, also in a served run's process

    check_parameters(margin, benchmark_size, keep)
    logger = get_run_logger()
    torch.set_num_threads(threads := thread_share(concurrent_runs))
    name, experiment = model_name(config.task), experiment or experiment_name(config.task)
    run_id = start_retrain_run(config.task, experiment, tags := flow_run_tags())
    unchanged = data_unchanged(config, name)
    if unchanged is not None:
        logger.info("%s: %s; nothing to retrain", name, unchanged)
        MlflowClient().set_tag(run_id, SKIPPED_TAG, unchanged)
        tracking.end_run(MlflowClient(), run_id, "FINISHED")
        return {"run_id": run_id, "experiment": experiment, "skipped": unchanged, "prefect_flow_run_id": tags["prefect.flow_run_id"]}
    folder = promotion.scratch_folder()
    version, decision = None, None
    try:
        benchmark = model_steps.prepare_benchmark(config, experiment, benchmark_size, folder)
        seed = challenger_seed(fresh_seed() if seed is None else seed, benchmark.seed)
        challenger = config.model_copy(update={"seed": seed})
        data = tasks.dataset(challenger)
        log_retrain_params(run_id, challenger, margin, benchmark, threads, keep)
        share = model_steps.benchmark_overlap(run_id, challenger, benchmark, data)
        logger.info("challenger seed %d; benchmark %s (%d examples, %.1f%% in the fresh training data); %d torch threads",
                    seed, benchmark.run_id, benchmark.size, 100 * share, threads)  # fmt: skip
        trained = train_flow(config=challenger, experiment=experiment, promote=False, parent_run_id=run_id)  # registers
        version = str(trained["model"]["version"])
        decision = model_steps.promote(name, version, challenger, benchmark, margin, run_id, "retrain")
        pruned = settle(logger, name, version, decision, keep, run_id)
        tracking.end_run(MlflowClient(), run_id, "FINISHED")
    except BaseException as exc:
        end_failed(exc, name, version if decision is None else None, run_id)
        raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "run_id": run_id,
        "experiment": experiment,
        "tracking_uri": store.resolve_store().tracking_uri,
        "seed": seed,
        "challenger": trained,
        "decision": decision.as_dict(),
        "benchmark": {"run_id": benchmark.run_id, "size": benchmark.size, "seed": benchmark.seed},
        "benchmark_overlap": share,
        "pruned": pruned,
        "prefect_flow_run_id": tags["prefect.flow_run_id"],
    }
