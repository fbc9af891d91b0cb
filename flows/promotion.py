"""The MLflow side of scheduled retraining: the fixed benchmark set kept with the registered
model, challenger-vs-champion scoring on it, margin promotion and the decision records.

Plain functions over an explicit :class:`~mlflow.MlflowClient` (Prefect-free, like
``tracking``). The retrain flow supplies the lock that serialises promotions.

Contracts:

- Benchmark: one per registered model, created by the first retrain of that model and never
  changed. Its examples are a JSON artifact (``benchmark/benchmark.json``: task, options, seed,
  ``examples`` as ``[source, target, alignment]`` rows) of a dedicated run; the registered model's
  tags ``attnlab.benchmark_run_id`` and ``attnlab.benchmark_sha256`` point at it and guard it.
- Score: exact match of a registered version on the benchmark, through the same loading and
  evaluation code for every version.
- Decision: the challenger takes the ``champion`` alias when there is no champion, or when
  ``challenger_score - champion_score > margin`` (rounded to 1e-9, so float noise never decides);
  an equal score never wins. The champion is read, scored and replaced under one lock, so two
  retrains at once cannot leave the alias on a model that did not beat the one it replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import random
import secrets
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException

from attnlab.config import ExperimentConfig
from attnlab.flows import tracking
from attnlab.plugins import Example

BENCHMARK_RUN_TAG = "attnlab.benchmark_run_id"
BENCHMARK_SHA_TAG = "attnlab.benchmark_sha256"
BENCHMARK_ARTIFACT = "benchmark/benchmark.json"
#: Prefix of the decision tags on the retrain run and on the challenger's model version.
TAG = "retrain."
#: Decimal places the score difference is rounded to before it is compared with the margin.
PRECISION = 9


@dataclass(frozen=True)
class Benchmark:
    """A fixed benchmark set: the run holding it, its seed, size and digest, and a local copy of
    its JSON file (``path``)."""

    run_id: str
    seed: int
    size: int
    sha256: str
    path: Path

    def examples(self) -> list[Example]:
        data = json.loads(self.path.read_text(encoding="utf-8"))
        return [Example(s, t, None if a is None else tuple(tuple(x) for x in a)) for s, t, a in data["examples"]]


@dataclass(frozen=True)
class Decision:
    """The outcome of one challenger-vs-champion comparison. ``champion_version`` and
    ``champion_score`` describe the alias holder the challenger was compared with (None: there
    was none)."""

    promoted: bool
    reason: str
    challenger_version: str
    challenger_score: float
    champion_version: str | None
    champion_score: float | None
    margin: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- the rule


def decide(challenger_score: float, champion_score: float | None, margin: float) -> tuple[bool, str]:
    """(promoted, reason) for the scores on the benchmark: the challenger wins when there is no
    champion, or when it beats the champion by more than ``margin``. NaN never wins."""
    if math.isnan(challenger_score):
        return False, "challenger score is NaN"
    if champion_score is None:
        return True, f"first champion: no model held the alias (challenger {challenger_score:.4f})"
    difference = round(challenger_score - champion_score, PRECISION)
    if difference > margin:
        return True, (
            f"challenger {challenger_score:.4f} beats champion {champion_score:.4f} by "
            f"{difference:.4f} > margin {margin:.4f}"
        )
    return False, (
        f"challenger {challenger_score:.4f} does not beat champion {champion_score:.4f} by more "
        f"than margin {margin:.4f} (difference {difference:+.4f})"
    )


# --------------------------------------------------------------------------- the benchmark


def draw_benchmark(config: ExperimentConfig, size: int, seed: int) -> list[Example]:
    """``size`` distinct examples of the config's test distribution (its task, with
    ``test_task_options`` when given), deterministic for ``seed``."""
    from attnlab.data import draw_distinct
    from attnlab.model import build_task

    task = build_task(config, split="test")
    return draw_distinct(task, size, random.Random(seed))


def _benchmark_json(config: ExperimentConfig, seed: int, examples: list[Example]) -> str:
    data = {
        "task": config.task,
        "task_options": {**config.task_options, **config.test_task_options},
        "seed": seed,
        "examples": [[ex.source, ex.target, None if ex.alignment is None else [list(a) for a in ex.alignment]] for ex in examples],
    }
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


def create_benchmark(
    client: MlflowClient, name: str, experiment_id: str, config: ExperimentConfig, size: int, seed: int | None = None
) -> str:
    """Draw the benchmark, store it in a new FINISHED run (JSON artifact and an MLflow dataset
    input) and point registered model ``name`` at it; the run id. Callers hold the lock."""
    import mlflow
    import pandas as pd
    from mlflow.entities import DatasetInput, InputTag

    seed = secrets.randbelow(2**31) if seed is None else seed
    examples = draw_benchmark(config, size, seed)
    text = _benchmark_json(config, seed, examples)
    tags = {"attnlab.kind": "benchmark", "task": config.task, "registered_model": name}
    run_id = client.create_run(experiment_id, run_name=f"benchmark-{config.task}", tags=tags).info.run_id
    try:
        params = {"task": config.task, "size": str(size), "seed": str(seed), "task_options": json.dumps(config.task_options, sort_keys=True)}
        client.log_batch(run_id, params=[Param(k, v) for k, v in params.items()])
        client.log_text(run_id, text, BENCHMARK_ARTIFACT)
        frame = pd.DataFrame({"source": [ex.source for ex in examples], "target": [ex.target for ex in examples]})
        dataset = mlflow.data.from_pandas(frame, name=f"{config.task}-benchmark-seed{seed}", targets="target")
        client.log_inputs(run_id, datasets=[DatasetInput(dataset._to_mlflow_entity(), [InputTag("mlflow.data.context", "benchmark")])])
    except BaseException as exc:
        tracking.end_run(client, run_id, "FAILED", error=f"{type(exc).__name__}: {exc}")
        raise
    client.set_terminated(run_id, "FINISHED")
    client.set_registered_model_tag(name, BENCHMARK_SHA_TAG, hashlib.sha256(text.encode()).hexdigest())
    client.set_registered_model_tag(name, BENCHMARK_RUN_TAG, run_id)
    return run_id


def load_benchmark(client: MlflowClient, name: str, folder: Path) -> Benchmark | None:
    """The benchmark of registered model ``name`` downloaded into ``folder``; None when the model
    has none yet. Raises ValueError when the stored file no longer matches its digest."""
    try:
        tags = client.get_registered_model(name).tags
    except MlflowException as exc:
        if tracking.is_missing(exc):
            return None
        raise
    run_id = tags.get(BENCHMARK_RUN_TAG)
    if not run_id:
        return None
    path = Path(client.download_artifacts(run_id, BENCHMARK_ARTIFACT, str(folder)))
    text = path.read_text(encoding="utf-8")
    digest = hashlib.sha256(text.encode()).hexdigest()
    if tags.get(BENCHMARK_SHA_TAG) and digest != tags[BENCHMARK_SHA_TAG]:
        raise ValueError(f"the benchmark of {name!r} (run {run_id}) changed since it was fixed: sha256 {digest}")
    data = json.loads(text)
    return Benchmark(run_id, int(data["seed"]), len(data["examples"]), digest, path)


def ensure_benchmark(
    client: MlflowClient,
    name: str,
    experiment_id: str,
    config: ExperimentConfig,
    size: int,
    folder: Path,
    lock: ContextManager[Any] | None = None,
) -> Benchmark:
    """The benchmark of ``name``, created on first use (``size`` examples) under ``lock`` so that
    concurrent first retrains agree on one; later calls ignore ``size``."""
    found = load_benchmark(client, name, folder)
    if found is not None:
        return found
    with lock or contextlib.nullcontext():
        found = load_benchmark(client, name, folder)  # another retrain may have made it meanwhile
        if found is not None:
            return found
        tracking.ensure_registered_model(client, name, config.task)
        create_benchmark(client, name, experiment_id, config, size)
        return load_benchmark(client, name, folder)


def benchmark_score(client: MlflowClient, name: str, version: str, examples: list[Example], beam_size: int = 1) -> float:
    """Exact match of registered ``name`` version ``version`` on ``examples`` (loaded from the
    registry, decoded with ``beam_size``)."""
    from attnlab.evaluate import evaluate

    with tracking_uri_of(client):
        python_model = tracking.load_pyfunc(f"models:/{name}/{version}").unwrap_python_model()
    return float(evaluate(python_model.model, examples, beam_size=beam_size).metrics["exact_match"])


@contextlib.contextmanager
def tracking_uri_of(client: MlflowClient):
    """Make MLflow's fluent API (used by pyfunc loading) use ``client``'s tracking URI."""
    import mlflow

    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(client.tracking_uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(previous)


def overlap(benchmark: Iterable[Example], training: Iterable[Example], key: Callable[[Example], str]) -> float:
    """Share of benchmark examples whose key also occurs in ``training``."""
    benchmark = list(benchmark)
    seen = {key(ex) for ex in training}
    return sum(key(ex) in seen for ex in benchmark) / max(len(benchmark), 1)


# --------------------------------------------------------------------------- promotion


def promote(
    client: MlflowClient,
    name: str,
    challenger_version: str,
    score: Callable[[str], float],
    margin: float,
    lock: ContextManager[Any],
) -> Decision:
    """Compare the challenger with the current champion on the benchmark (``score(version)``)
    and move the alias to the challenger when it wins (see :func:`decide`).

    The challenger is scored first; reading the champion, scoring it and setting the alias happen
    under ``lock``, so a concurrent promotion cannot slip in between (compare-and-set). A version
    that already holds the alias (a retried promotion) keeps it.
    """
    challenger_score = score(challenger_version)
    with lock:
        current = tracking.champion_version(client, name)
        if current is not None and str(current.version) == str(challenger_version):
            return Decision(True, "already the champion (a retried promotion)", str(challenger_version), challenger_score, str(current.version), challenger_score, margin)
        champion = None if current is None else str(current.version)
        champion_score = None if champion is None else score(champion)
        promoted, reason = decide(challenger_score, champion_score, margin)
        if promoted:
            client.set_registered_model_alias(name, tracking.CHAMPION, str(challenger_version))
    return Decision(promoted, reason, str(challenger_version), challenger_score, champion, champion_score, margin)


def _text(value: float | None) -> str:
    return "none" if value is None else repr(float(value))


def record_decision(client: MlflowClient, run_id: str | None, name: str, decision: Decision, benchmark: Benchmark) -> None:
    """The decision as tags of the challenger's model version and as tags and metrics of the
    retrain run (``promoted`` 1/0, both scores, the margin)."""
    tags = {
        "promoted": str(decision.promoted).lower(),
        "reason": decision.reason,
        "challenger_score": _text(decision.challenger_score),
        "champion_score": _text(decision.champion_score),
        "champion_version": decision.champion_version or "none",
        "margin": repr(float(decision.margin)),
        "benchmark_run_id": benchmark.run_id,
        "benchmark_size": str(benchmark.size),
    }
    if run_id:
        tags["run_id"] = run_id
    for key, value in tags.items():
        client.set_model_version_tag(name, decision.challenger_version, TAG + key, value)
    if not run_id:
        return
    run_tags = {**{k: v for k, v in tags.items() if k != "run_id"}, "challenger_version": decision.challenger_version}
    metrics = {"challenger_score": decision.challenger_score, "margin": decision.margin, "promoted": float(decision.promoted)}
    if decision.champion_score is not None:
        metrics["champion_score"] = decision.champion_score
    now = int(time.time() * 1000)
    client.log_batch(
        run_id,
        metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
        tags=[RunTag(TAG + k, v[:5000]) for k, v in run_tags.items()],
    )


def record_failure(client: MlflowClient, name: str, version: str, run_id: str | None, error: str) -> None:
    """Tag a registered challenger whose retrain failed before a decision: not promoted, why."""
    reason = f"retrain failed before the decision: {error}"[:4000]
    client.set_model_version_tag(name, version, TAG + "promoted", "false")
    client.set_model_version_tag(name, version, TAG + "reason", reason)
    if run_id:
        client.set_model_version_tag(name, version, TAG + "run_id", run_id)


def start_retrain_run(client: MlflowClient, experiment_id: str, task: str, tags: dict[str, str]) -> str:
    """A RUNNING run for one retrain (the challenger's training run becomes its child)."""
    return client.create_run(experiment_id, run_name=f"retrain-{task}", tags={"attnlab.kind": "retrain", "task": task, **tags}).info.run_id


def log_retrain_params(client: MlflowClient, run_id: str, config: ExperimentConfig, margin: float, benchmark: Benchmark) -> None:
    """The challenger's config (with its fresh seed) and the comparison's settings as params."""
    params = {
        **tracking.config_params(config),
        "margin": repr(float(margin)),
        "benchmark_run_id": benchmark.run_id,
        "benchmark_size": str(benchmark.size),
        "benchmark_seed": str(benchmark.seed),
    }
    client.log_batch(run_id, params=[Param(k, v) for k, v in params.items()])


def scratch_folder() -> Path:
    """A new temporary folder for downloaded benchmark files."""
    return Path(tempfile.mkdtemp(prefix="attnlab-benchmark-"))
