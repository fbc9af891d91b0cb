"""Promotion in MLflow: score the challenger and the champion on the registered model's benchmark,
ask the one rule (:func:`attnlab.ops.promotion.decide`), move the ``champion`` alias and record the
decision. Every command that promotes (``attnlab train``, the retrain flow, ``attnlab sweep
--register``) goes through :func:`promote`.

Reading, scoring and replacing the champion (and drawing the first benchmark) happen under one
lock per registered model (:func:`attnlab.flows.tracking.promotion_lock.promotion_lock`).

Decision records: tags ``promotion.*`` on the challenger's model version and on the run that
promoted (for ``attnlab train`` its training run, for a retrain the retrain run), and metrics
``challenger_score``, ``champion_score``, ``margin``, ``promoted`` on that run.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow.entities import Metric, RunTag

from attnlab.evaluation.benchmark import BenchmarkSet, incomparable_reason
from attnlab.flows.tracking import registry as model_registry
from attnlab.flows.tracking.benchmark_store import Benchmark
from attnlab.flows.tracking.champion_tag import move_champion_tag
from attnlab.flows.tracking.errors import ModelUnusable
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.run_records import UNUSABLE_TAG
from attnlab.ops.promotion import Decision, decide, keep_unusable_champion
from mlflow import MlflowClient

if TYPE_CHECKING:  # torch comes with it
    from attnlab.model.assembly import Seq2Seq

#: Prefix of the decision tags.
TAG = "promotion."

#: A factory of the lock to hold while the champion is read, scored and replaced.
Lock = Callable[[], AbstractContextManager[Any]]


def load_version(client: MlflowClient, name: str, version: str) -> Seq2Seq:
    """The Seq2Seq model of registered ``name`` version ``version``, loaded from the registry
    (the same way for every version)."""
    with tracking_uri_of(client):
        return model_registry.load_attnlab_model(f"models:/{name}/{version}").model


def benchmark_score(model: Seq2Seq, drawn: BenchmarkSet, beam_size: int = 1) -> float:
    """Exact match of ``model`` on the benchmark's examples."""
    from attnlab.evaluation.metrics import score_exact_match

    return float(score_exact_match(model, drawn.examples, beam_size=beam_size))


@contextlib.contextmanager
def tracking_uri_of(client: MlflowClient) -> Iterator[None]:
    """Make MLflow's fluent API (used by pyfunc loading) use ``client``'s tracking URI."""
    import mlflow

    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(client.tracking_uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(previous)


def comparability(model: Seq2Seq, config: ExperimentConfig, drawn: BenchmarkSet) -> str | None:
    """Why ``model`` (trained with ``config``) cannot be measured on the benchmark, or None."""
    from attnlab.model.assembly import build_task

    tokens = (model.src_vocab.tokens, model.tgt_vocab.tokens)
    return incomparable_reason(drawn.examples, drawn.task, config.task, build_task(config, split="test"), tokens, model.max_source_length)


def promote(
    client: MlflowClient,
    name: str,
    challenger_version: str,
    config: ExperimentConfig,
    benchmark: Benchmark,
    margin: float,
    lock: Lock,
) -> Decision:
    """Score the challenger (trained with ``config``) and the champion on ``benchmark`` and move
    the alias by the one rule (:func:`compare_and_set`). A challenger that cannot be measured on
    the benchmark is registered but not promoted; the decision says why."""
    version = str(challenger_version)
    drawn = benchmark.read()  # once: the challenger and the champion are scored on these examples
    challenger = load_version(client, name, version)
    problem = comparability(challenger, config, drawn)
    if problem:
        current = model_registry.champion_version(client, name)
        holder = None if current is None else str(current.version)
        return Decision(False, f"not comparable with the benchmark: {problem}", version, None, holder, None, margin)

    def score(candidate: str) -> float:
        model = challenger if str(candidate) == version else load_version(client, name, candidate)
        return benchmark_score(model, drawn, config.beam_size)

    return compare_and_set(client, name, version, score, margin, lock)


def compare_and_set(
    client: MlflowClient, name: str, challenger_version: str, score: Callable[[str], float], margin: float, lock: Lock
) -> Decision:
    """Compare the challenger with the current champion (``score(version)``, the same benchmark
    for both) and move the alias to the challenger when :func:`attnlab.ops.promotion.decide` says so,
    and with it the champion tag of the runs (:mod:`attnlab.flows.tracking.champion_tag`).

    The challenger is scored first; reading the champion, scoring it and setting the alias happen
    under ``lock()``, so a concurrent promotion cannot slip in between. A version that already
    holds the alias (a retried promotion) keeps it.
    """
    version = str(challenger_version)
    challenger_score = score(version)
    with lock():
        current = model_registry.champion_version(client, name)
        if current is not None and str(current.version) == version:
            return Decision(
                True, "already the champion (a retried promotion)", version, challenger_score, version, challenger_score, margin
            )
        champion = None if current is None else str(current.version)
        try:
            champion_score = None if champion is None else score(champion)
        except ModelUnusable as exc:
            promoted, reason = keep_unusable_champion(str(exc))
            return Decision(promoted, reason, version, challenger_score, champion, None, margin, champion_unusable=str(exc))
        if current is not None and UNUSABLE_TAG in (current.tags or {}):
            client.delete_model_version_tag(name, champion, UNUSABLE_TAG)  # repaired since
        promoted, reason = decide(challenger_score, champion_score, margin)
        if promoted:
            client.set_registered_model_alias(name, model_registry.CHAMPION, version)
            move_champion_tag(client, name, version, current)
    return Decision(promoted, reason, version, challenger_score, champion, champion_score, margin)


def _text(value: float | None) -> str:
    return "none" if value is None else repr(float(value))


def record_decision(client: MlflowClient, run_id: str | None, name: str, decision: Decision, benchmark: Benchmark, command: str) -> None:
    """The decision as tags of the challenger's model version and as tags and metrics of the
    run that promoted (``promoted`` 1/0, both scores, the margin)."""
    tags = {
        "promoted": str(decision.promoted).lower(),
        "reason": decision.reason[:4000],
        "challenger_score": _text(decision.challenger_score),
        "champion_score": _text(decision.champion_score),
        "champion_version": decision.champion_version or "none",
        "margin": repr(float(decision.margin)),
        "benchmark_run_id": benchmark.run_id,
        "benchmark_size": str(benchmark.size),
        "command": command,
    }
    version_tags = {**tags, "run_id": run_id} if run_id else tags
    for key, value in version_tags.items():
        client.set_model_version_tag(name, decision.challenger_version, TAG + key, value)
    if decision.champion_unusable and decision.champion_version:
        client.set_model_version_tag(name, decision.champion_version, UNUSABLE_TAG, decision.champion_unusable[:4000])
    if not run_id:
        return
    metrics = {"margin": decision.margin, "promoted": float(decision.promoted)}
    for key in ("challenger_score", "champion_score"):
        if getattr(decision, key) is not None:
            metrics[key] = getattr(decision, key)
    now = int(time.time() * 1000)
    client.log_batch(
        run_id,
        metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
        tags=[RunTag(TAG + k, v) for k, v in {**tags, "challenger_version": decision.challenger_version}.items()],
    )


def record_failure(client: MlflowClient, name: str, version: str, run_id: str | None, error: str) -> None:
    """Tag a registered challenger whose promotion failed before a decision: not promoted, why."""
    client.set_model_version_tag(name, version, TAG + "promoted", "false")
    client.set_model_version_tag(name, version, TAG + "reason", f"failed before the decision: {error}"[:4000])
    if run_id:
        client.set_model_version_tag(name, version, TAG + "run_id", run_id)


def scratch_folder() -> Path:
    """A new temporary folder for downloaded benchmark files."""
    return Path(tempfile.mkdtemp(prefix="attnlab-benchmark-"))
