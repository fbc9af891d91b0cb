"""The benchmark set kept in MLflow: one per registered model, made by its first promotion and
never changed.

Its document (see :mod:`attnlab.evaluation.benchmark`) is the artifact ``benchmark/benchmark.json`` of a
dedicated FINISHED run (``benchmark-<task>``, also an MLflow dataset input); the registered
model's tags ``attnlab.benchmark_run_id`` and ``attnlab.benchmark_sha256`` point at it and guard it.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from mlflow.entities import Dataset, DatasetInput, InputTag, Param
from mlflow.exceptions import MlflowException

from attnlab.evaluation.benchmark import BenchmarkSet, draw_benchmark, from_json, to_json
from attnlab.flows.tracking import registry as model_registry
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking.errors import UserError
from attnlab.flows.tracking.store import is_missing
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.run_records import KIND_TAG
from mlflow import MlflowClient

BENCHMARK_RUN_TAG = "attnlab.benchmark_run_id"
BENCHMARK_SHA_TAG = "attnlab.benchmark_sha256"
BENCHMARK_ARTIFACT = "benchmark/benchmark.json"


@dataclass(frozen=True)
class Benchmark:
    """A registered model's benchmark: the run holding it, its digest, seed and size, and a local
    copy of its document (``path``, there while the promotion that downloaded it lasts)."""

    run_id: str
    sha256: str
    seed: int
    size: int
    path: Path

    def read(self) -> BenchmarkSet:
        return from_json(self.path.read_text(encoding="utf-8"))


def create_benchmark(
    client: MlflowClient, name: str, experiment_id: str, config: ExperimentConfig, size: int, seed: int | None = None
) -> str:
    """Draw the benchmark, store it in a new FINISHED run (JSON artifact and an MLflow dataset
    input) and point registered model ``name`` at it; the run id. Callers hold the promotion lock."""
    from mlflow.data.pandas_dataset import from_pandas  # what mlflow.data.from_pandas names

    drawn = draw_benchmark(config, size, secrets.randbelow(2**31) if seed is None else seed)
    text = to_json(drawn)
    tags = {KIND_TAG: "benchmark", "task": config.task, "registered_model": name}
    run_id = str(client.create_run(experiment_id, run_name=f"benchmark-{config.task}", tags=tags).info.run_id)
    try:
        params = {"task": drawn.task, "size": str(size), "seed": str(drawn.seed), "task_options": tracking.as_param(drawn.task_options)}
        client.log_batch(run_id, params=[Param(k, v) for k, v in params.items()])
        client.log_text(run_id, text, BENCHMARK_ARTIFACT)
        frame = pd.DataFrame({"source": [ex.source for ex in drawn.examples], "target": [ex.target for ex in drawn.examples]})
        dataset = from_pandas(frame, name=f"{config.task}-benchmark-seed{drawn.seed}", targets="target")
        client.log_inputs(run_id, datasets=[DatasetInput(Dataset(**dataset.to_dict()), [InputTag("mlflow.data.context", "benchmark")])])
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
    except Exception as exc:
        if is_missing(exc):
            return None
        raise
    run_id = tags.get(BENCHMARK_RUN_TAG)
    if not run_id:
        return None
    try:
        path = Path(client.download_artifacts(run_id, BENCHMARK_ARTIFACT, str(folder)))
    except MlflowException as exc:
        raise UserError(
            f"the benchmark of {name!r} (file {BENCHMARK_ARTIFACT} of run {run_id}) cannot be read: {exc.message.rstrip('.')}; "
            "restore the store's artifacts/ from a backup (see 'Backup and restore' in mlflow/README.md)"
        ) from exc
    text = path.read_text(encoding="utf-8")
    digest = hashlib.sha256(text.encode()).hexdigest()
    if tags.get(BENCHMARK_SHA_TAG) and digest != tags[BENCHMARK_SHA_TAG]:
        raise ValueError(f"the benchmark of {name!r} (run {run_id}) changed since it was fixed: sha256 {digest}")
    drawn = from_json(text)
    return Benchmark(run_id, digest, drawn.seed, len(drawn.examples), path)


def ensure_benchmark(
    client: MlflowClient,
    name: str,
    experiment_id: str,
    config: ExperimentConfig,
    size: int,
    folder: Path,
    lock: AbstractContextManager[Any] | None = None,
) -> Benchmark:
    """The benchmark of ``name``, created on first use (``size`` examples of ``config``'s test
    distribution) under ``lock`` so that concurrent first promotions agree on one; later calls
    ignore ``config`` and ``size``."""
    found = load_benchmark(client, name, folder)
    if found is not None:
        return found
    with lock or contextlib.nullcontext():
        found = load_benchmark(client, name, folder)  # another promotion may have made it meanwhile
        if found is not None:
            return found
        model_registry.ensure_registered_model(client, name, config.task)
        create_benchmark(client, name, experiment_id, config, size)
        created = load_benchmark(client, name, folder)
        if created is None:  # the model's benchmark tag was removed right after it was set
            raise RuntimeError(f"the benchmark just stored for registered model {name!r} cannot be found")
        return created
