"""The retrain flow: fresh data -> train a challenger -> compare it with the champion on the fixed
benchmark set -> move the ``champion`` alias only when the challenger wins by the margin.

One MLflow run per retrain (``retrain-<task>``, tag ``attnlab.kind=retrain``) holds the decision;
the challenger's training run (the ``attnlab-train`` subflow) is its child. The run ends FINISHED,
or FAILED/KILLED with ``attnlab.error``; any failure before the decision leaves the alias where it
was, and the Prefect flow run ends Failed with the reason. A served deployment keeps serving.

Promotions (and the first benchmark's creation) are serialised per registered model by a Prefect
global concurrency limit of one slot (``attnlab-promotion-<model>``), shared by every process
that talks to the same Prefect server, workers on other machines included.

No ``from __future__ import annotations`` here: ``flow.serve`` pickles the flow function by value
into each run's process, and string annotations would then name types its globals lack.
"""

import contextlib
import secrets
import shutil
import uuid
from pathlib import Path
from typing import Any, Iterator

from mlflow import MlflowClient
from prefect import flow, get_run_logger, task
from prefect.runtime import flow_run

from attnlab.config import ExperimentConfig
from attnlab.flows import promotion, tasks, tracking

#: Benchmark examples drawn by a model's first retrain (later retrains reuse that set).
BENCHMARK_SIZE = 500
#: Longest wait for the promotion lock before the retrain fails (seconds).
LOCK_TIMEOUT = 1800


def lock_name(model: str) -> str:
    return f"attnlab-promotion-{model}"


@contextlib.contextmanager
def promotion_lock(model: str, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the one slot of the Prefect global concurrency limit of ``model`` (created with one
    slot when missing). The slot is leased: a holder that dies frees it when the lease ends."""
    from prefect.client.orchestration import get_client
    from prefect.concurrency.sync import concurrency

    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, GlobalConcurrencyLimitUpdate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    name = lock_name(model)
    with get_client(sync_client=True) as client:
        try:
            limit = client.read_global_concurrency_limit_by_name(name)
            if limit.limit != 1 or not limit.active:  # someone widened or switched off the lock
                client.update_global_concurrency_limit(name, GlobalConcurrencyLimitUpdate(limit=1, active=True))
        except ObjectNotFound:
            with contextlib.suppress(ObjectAlreadyExists):  # created meanwhile by another retrain
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
    with concurrency(name, occupy=1, timeout_seconds=timeout, strict=True):
        yield


def fresh_seed() -> int:
    """A new seed for each flow run: derived from its id (so the seed is on the run), else random."""
    run_id = flow_run.id
    return uuid.UUID(str(run_id)).int % 2**31 if run_id else secrets.randbelow(2**31)


@task(name="start-retrain-run", **tasks.LOGGING)
def start_retrain_run(task_name: str, experiment: str, tags: dict[str, str]) -> str:
    """Check the store and open the RUNNING retrain run; its id."""
    store = tracking.use_store()
    tracking.check_store(store)
    client = MlflowClient()
    return promotion.start_retrain_run(client, tracking.ensure_experiment(client, experiment, store), task_name, tags)


@task(name="prepare-benchmark", **tasks.LOGGING)
def prepare_benchmark(config: ExperimentConfig, experiment: str, size: int, folder: Path) -> promotion.Benchmark:
    """The registered model's benchmark set (made by its first retrain), downloaded to ``folder``."""
    client = MlflowClient()
    name = tracking.model_name(config.task)
    experiment_id = tracking.ensure_experiment(client, experiment, tracking.resolve_store())
    return promotion.ensure_benchmark(client, name, experiment_id, config, size, folder, lock=promotion_lock(name))


@task(name="log-retrain-params", **tasks.LOGGING)
def log_retrain_params(run_id: str, config: ExperimentConfig, margin: float, benchmark: promotion.Benchmark, data: Path) -> float:
    """Params of the retrain run, and the share of benchmark examples in the fresh training data
    (metric ``benchmark_overlap``; the task's key decides sameness)."""
    from attnlab.model import build_task

    client = MlflowClient()
    promotion.log_retrain_params(client, run_id, config, margin, benchmark)
    splits = tasks.load_splits(data)
    share = promotion.overlap(benchmark.examples(), splits.train + splits.validation, build_task(config).key)
    client.log_metric(run_id, "benchmark_overlap", share)
    return share


@task(name="promote-challenger", **tasks.LOGGING)
def promote_challenger(name: str, version: str, benchmark: promotion.Benchmark, margin: float, beam_size: int) -> promotion.Decision:
    """Score challenger and champion on the benchmark; move the alias if the challenger wins."""
    client = MlflowClient()
    examples = benchmark.examples()
    score = lambda v: promotion.benchmark_score(client, name, v, examples, beam_size)  # noqa: E731
    return promotion.promote(client, name, version, score, margin, promotion_lock(name))


@task(name="record-decision", **tasks.LOGGING)
def record_decision(run_id: str, name: str, decision: promotion.Decision, benchmark: promotion.Benchmark) -> None:
    promotion.record_decision(MlflowClient(), run_id, name, decision, benchmark)


def check_parameters(margin: float, benchmark_size: int) -> None:
    """ValueError for a margin outside [0, 1) or a benchmark of fewer than one example."""
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be in [0, 1) (an exact-match difference), got {margin}")
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
) -> dict[str, Any]:
    """One retrain; its summary (JSON-ready): ``run_id`` (the retrain run), ``seed``,
    ``challenger`` (the train flow's summary), ``decision`` (see promotion.Decision),
    ``benchmark`` (run id, size) and ``benchmark_overlap``.

    ``config`` is the base config; its seed is replaced by ``seed`` or, by default, a fresh one
    derived from the flow run's id. ``margin``: the exact-match difference on the benchmark the
    challenger must exceed (0: strictly better). ``benchmark_size`` applies when the registered
    model has no benchmark yet. ``experiment`` defaults to ``attnlab-<task>``.
    """
    from attnlab.flows.train_flow import dataset, train_flow  # by import, also in a served run's process

    check_parameters(margin, benchmark_size)
    logger = get_run_logger()
    name = tracking.model_name(config.task)
    experiment = experiment or tracking.experiment_name(config.task)
    tags = {"prefect.flow_run_id": str(flow_run.id or ""), "prefect.flow_run_name": str(flow_run.name or "")}
    run_id = start_retrain_run(config.task, experiment, tags)
    folder = promotion.scratch_folder()
    version: str | None = None
    decision: promotion.Decision | None = None
    try:
        benchmark = prepare_benchmark(config, experiment, benchmark_size, folder)
        seed = fresh_seed() if seed is None else seed
        if seed == benchmark.seed:  # that seed would train on the benchmark's own examples
            seed += 1
        challenger = config.model_copy(update={"seed": seed})
        data = dataset(challenger)
        share = log_retrain_params(run_id, challenger, margin, benchmark, data)
        logger.info("challenger seed %d; benchmark %s (%d examples, %.1f%% in the fresh training data)", seed, benchmark.run_id, benchmark.size, 100 * share)
        trained = train_flow(config=challenger, experiment=experiment, promote=False, parent_run_id=run_id)  # registers
        version = str(trained["model"]["version"])
        decision = promote_challenger(name, version, benchmark, margin, challenger.beam_size)
        record_decision(run_id, name, decision, benchmark)
        logger.info("%s version %s %s: %s", name, version, "promoted to champion" if decision.promoted else "not promoted", decision.reason)
        tracking.end_run(MlflowClient(), run_id, "FINISHED")
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        interrupted = isinstance(exc, (KeyboardInterrupt, SystemExit)) or type(exc).__name__ == "TerminationSignal"
        client = MlflowClient()
        with contextlib.suppress(Exception):  # best effort: the store may be what failed
            if version is not None and decision is None:
                promotion.record_failure(client, name, version, run_id, error)
        with contextlib.suppress(Exception):
            tracking.end_run(client, run_id, "KILLED" if interrupted else "FAILED", error=error)
        raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "run_id": run_id,
        "experiment": experiment,
        "tracking_uri": tracking.resolve_store().tracking_uri,
        "seed": seed,
        "challenger": trained,
        "decision": decision.as_dict(),
        "benchmark": {"run_id": benchmark.run_id, "size": benchmark.size, "seed": benchmark.seed},
        "benchmark_overlap": share,
        "prefect_flow_run_id": tags["prefect.flow_run_id"],
    }
