"""The retrain flow: fresh data -> train a challenger -> compare it with the champion on the fixed
benchmark set -> move the ``champion`` alias only when the challenger wins by the margin.

A task that reads its data from a file (``pairs``) retrains only on data that neither the champion
nor the last completed retrain (promoted or not) was trained on: otherwise the retrain run ends
FINISHED at once, tagged ``attnlab.retrain.skipped`` with the reason, also its description in
MLflow (:mod:`attnlab.ops.data_change`; ``retrain_always`` trains anyway).

One MLflow run per retrain (``retrain-<task>``, tag ``attnlab.kind=retrain``) holds the decision;
the challenger's training run (the ``attnlab-train`` subflow) is its child. The run carries its
owner's tags (a tick whose process died is ended as stale by the next command) and ends FINISHED,
or FAILED/KILLED with ``attnlab.error``; any failure before the decision leaves the alias where it
was, and the Prefect flow run ends Failed with the reason in one line. A served deployment keeps
serving.

The decision is the one every command makes (:mod:`attnlab.flows.tracking.promote`, under the same
per-model lock), recorded as ``promotion.*`` tags on the retrain run and the challenger's version. Then, under that
lock, versions beyond the newest ``keep`` are pruned (:mod:`attnlab.flows.tracking.prune`).

No ``from __future__ import annotations`` here: ``flow.serve`` pickles the flow function by value
into each run's process, and string annotations would then name types its globals lack.
"""

import secrets
import shutil
import uuid
from typing import Any, NamedTuple

import torch
from mlflow.entities import Param
from prefect import flow, get_run_logger, task
from prefect.runtime import flow_run
from prefect.states import Failed

from attnlab.flows.run import model_steps
from attnlab.flows.run import steps as tasks
from attnlab.flows.run.flow_runs import ending_status, flow_run_tags
from attnlab.flows.tracking import promote as promotion
from attnlab.flows.tracking import prune as retention
from attnlab.flows.tracking import retrain_runs, store
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking.benchmark_store import Benchmark
from attnlab.flows.tracking.promotion_lock import promotion_lock
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.errors import UserError
from attnlab.ops.challenger import challenger_seed
from attnlab.ops.data_change import unchanged_reason
from attnlab.ops.promotion import BENCHMARK_SIZE, DEFAULT_MARGIN, Decision, check_margin
from attnlab.ops.retention import DEFAULT_KEEP, check_keep
from attnlab.ops.threads import thread_share
from attnlab.plugins import PluginError
from mlflow import MlflowClient


def fresh_seed() -> int:
    """A new seed for each flow run: derived from its id (so the seed is on the run), else random."""
    run_id = flow_run.id
    return uuid.UUID(str(run_id)).int % 2**31 if run_id else secrets.randbelow(2**31)


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
    margin: float = DEFAULT_MARGIN,
    benchmark_size: int = BENCHMARK_SIZE,
    seed: int | None = None,
    experiment: str | None = None,
    concurrent_runs: int = 1,
    keep: int = DEFAULT_KEEP,
    retrain_always: bool = False,
    verbose: bool = False,
) -> Any:
    """One retrain; its summary (JSON-ready): ``run_id`` (the retrain run), ``seed``, ``challenger``
    (the train flow's summary), ``decision`` (see promotion.Decision), ``benchmark`` (run id, size),
    ``benchmark_overlap`` and ``pruned`` (version numbers); or, when it did not train, ``skipped``.

    ``config`` is the base config; its seed is replaced by ``seed`` or, by default, a fresh one
    derived from the flow run's id. ``margin``: the exact-match difference on the benchmark the
    challenger must exceed (0: strictly better). ``benchmark_size`` applies when the registered
    model has no benchmark yet. ``experiment`` defaults to the registered model's name.
    ``concurrent_runs``: runs of the deployment at once on this machine (each takes that share of
    its cores for torch's threads). ``keep``: versions kept after the promotion
    (:mod:`attnlab.ops.retention`; at least 2). A task that reads a file retrains only when its
    data differs from what the champion and the last completed retrain were trained on, unless
    ``retrain_always``.

    Whatever fails after the retrain run is opened ends it FAILED (KILLED for an interrupt) with
    ``attnlab.error``, and the flow run Failed with one line as its message (and in the log; the
    traceback only with ``verbose``).
    """
    check_parameters(margin, benchmark_size, keep)
    logger = get_run_logger()
    torch.set_num_threads(threads := thread_share(concurrent_runs))
    name = config.registered_model()
    experiment = experiment or name
    run_id = retrain_runs.start_retrain_run(config.task, name, experiment, tags := flow_run_tags())
    version: list[str] = []  # the challenger's version once registered
    try:
        summary = retrain(config, name, experiment, run_id, Settings(margin, benchmark_size, seed, keep, threads, retrain_always), version)
    except Exception as exc:  # a tick reports every failure in one line; the run ends with it
        line = f"retrain of {name} failed: {one_line(exc)}; the champion is unchanged"
        retrain_runs.end_failed(one_line(exc), "FAILED", name, version[0] if version else None, run_id)
        logger.error(line, exc_info=verbose)
        return Failed(message=line)
    except BaseException as exc:
        retrain_runs.end_failed(one_line(exc), ending_status(exc), name, version[0] if version else None, run_id)
        raise
    return {**summary, "run_id": run_id, "experiment": experiment, "prefect_flow_run_id": tags["prefect.flow_run_id"]}


def one_line(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` on one line; a user's mistake (bad data, options a plugin
    refuses), whose message says it all, by its message alone."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, (UserError, PluginError)) else f"{type(exc).__name__}: {text}"


class Settings(NamedTuple):
    """A retrain's settings besides its config (see :func:`retrain_flow`)."""

    margin: float
    benchmark_size: int
    seed: int | None
    keep: int
    threads: int
    retrain_always: bool


def retrain(config: ExperimentConfig, name: str, experiment: str, run_id: str, settings: Settings, version: list[str]) -> dict[str, Any]:
    """The work of :func:`retrain_flow` inside its run: skip unchanged data, else train a
    challenger, promote it by the one rule and prune (``version`` gets the challenger's version
    as soon as it is registered); the summary's fields."""
    from attnlab.flows.run.train_flow import train_flow  # by import, also in a served run's process
    from attnlab.model.assembly import build_task

    logger = get_run_logger()
    current = build_task(config).data_version()
    unchanged = None if settings.retrain_always else unchanged_reason(current, retrain_runs.trained_before(MlflowClient(), name))
    if unchanged is not None:
        logger.info("%s: %s; nothing to retrain", name, unchanged)
        retrain_runs.end_skipped(run_id, unchanged)
        return {"skipped": unchanged}
    retrain_runs.record_data(run_id, current)
    folder = promotion.scratch_folder()
    try:
        benchmark = model_steps.prepare_benchmark(config, experiment, settings.benchmark_size, folder)
        seed = challenger_seed(fresh_seed() if settings.seed is None else settings.seed, benchmark.seed)
        challenger = config.model_copy(update={"seed": seed})
        data = tasks.dataset(challenger, model_steps.benchmark_keys(challenger))  # the benchmark never trains
        log_retrain_params(run_id, challenger, settings.margin, benchmark, settings.threads, settings.keep)
        share = model_steps.benchmark_overlap(run_id, challenger, benchmark, data)
        logger.info("challenger seed %d; benchmark %s (%d examples, %.1f%% in the fresh training data); %d torch threads",
                    seed, benchmark.run_id, benchmark.size, 100 * share, settings.threads)  # fmt: skip
        trained = train_flow(config=challenger, experiment=experiment, promote=False, parent_run_id=run_id)  # registers
        version.append(str(trained["model"]["version"]))
        decision = model_steps.promote(name, version[0], challenger, benchmark, settings.margin, run_id, "retrain")
        version.clear()  # decided: a failure from here on is not the version's
        pruned = settle(logger, name, str(trained["model"]["version"]), decision, settings.keep, run_id)
        tracking.end_run(MlflowClient(), run_id, "FINISHED")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "tracking_uri": store.resolve_store().tracking_uri,
        "seed": seed,
        "challenger": trained,
        "decision": decision.as_dict(),
        "benchmark": {"run_id": benchmark.run_id, "size": benchmark.size, "seed": benchmark.seed},
        "benchmark_overlap": share,
        "pruned": pruned,
    }
