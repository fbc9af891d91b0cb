"""Everything attnlab writes to and reads from MLflow: where the store is, the run's params,
metrics, tables and artifacts, the pyfunc model, its registration and the champion alias.

Plain functions over an explicit ``run_id`` and :class:`~mlflow.MlflowClient`, never the fluent
"active run": MLflow's active run is per thread, so these work from any Prefect task runner.

Store: ``MLFLOW_TRACKING_URI`` when set (a tracking server, used as is); otherwise the embedded
store ``sqlite:///<dir>/mlflow.db`` with artifacts under ``<dir>/artifacts``, where ``<dir>`` is
``ATTNLAB_MLFLOW_DIR`` or ``./mlflow``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import mlflow
import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import DatasetInput, InputTag, Metric, Param, RunStatus
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS, RESOURCE_DOES_NOT_EXIST, ErrorCode

from attnlab.config import ExperimentConfig
from attnlab.data import Splits
from attnlab.evaluate import Evaluation
from attnlab.flows.errors import TrackingUnavailable, UserError

DEFAULT_DIR = "mlflow"
CHAMPION = "champion"
#: The test metric that decides who is champion (higher is better); also a model-version tag.
CHAMPION_METRIC = "test_exact_match"
#: Per-epoch metrics from the training callback -> their MLflow names.
EPOCH_METRICS = {
    "train_loss": "train_loss",
    "val_loss": "val_loss",
    "val_exact_match": "val_exact_match",
    "seconds": "epoch_seconds",
    "samples_per_second": "samples_per_second",
    "train_seconds": "epoch_train_seconds",
    "learning_rate": "learning_rate",
}
#: Rows of the sample-predictions table (wrong ones first).
SAMPLE_ROWS = 200


@dataclass(frozen=True)
class Store:
    """Where runs go: the tracking URI and, for the embedded store, its folder."""

    tracking_uri: str
    folder: Path | None = None  # None: a tracking server decides where artifacts go

    @property
    def embedded(self) -> bool:
        return self.folder is not None

    @property
    def artifact_root(self) -> Path | None:
        return self.folder / "artifacts" if self.folder is not None else None


def resolve_store() -> Store:
    """The store this process logs to (see the module docstring).

    A ``MLFLOW_TRACKING_URI`` of the form ``sqlite:///<dir>/mlflow.db`` is an embedded store in
    ``<dir>``: :func:`use_store` exports the embedded store's URI that way (``mlflow.set_tracking_uri``
    sets the variable, for child processes), and its artifacts must still go to ``<dir>/artifacts``.
    """
    uri = os.environ.get("MLFLOW_TRACKING_URI", "").strip()
    if uri.startswith("sqlite:///") and uri.endswith("/mlflow.db"):
        return Store(uri, Path(uri.removeprefix("sqlite:///")).parent.resolve())
    if uri:
        return Store(uri)
    folder = Path(os.environ.get("ATTNLAB_MLFLOW_DIR", "").strip() or DEFAULT_DIR).expanduser().resolve()
    return Store(f"sqlite:///{folder / 'mlflow.db'}", folder)


def use_store(store: Store | None = None) -> Store:
    """Point this process's MLflow at ``store`` (default: :func:`resolve_store`); returns it."""
    store = store or resolve_store()
    if store.embedded:
        store.folder.mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(store.tracking_uri)
    return store


@contextlib.contextmanager
def _quick_http(timeout: float) -> Iterator[None]:
    """Fail fast instead of MLflow's default 7 retries with back-off and 120 s timeout."""
    names = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": str(max(1, round(timeout)))}
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _reason(exc: BaseException) -> str:
    """A short reason for a connection failure, without the wall of nested exceptions."""
    text = str(exc)
    for needle, reason in (
        ("Connection refused", "connection refused"),
        ("Name or service not known", "unknown host"),
        ("nodename nor servname", "unknown host"),
        ("timed out", "no answer in time"),
        ("Read timed out", "no answer in time"),
    ):
        if needle in text:
            return reason
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first if len(first) <= 160 else first[:157] + "..."


def check_store(store: Store, timeout: float = 3.0) -> None:
    """Raise TrackingUnavailable (one line) unless ``store`` answers within about ``timeout`` s.

    For the embedded store this creates the folder and the database on first use.
    """
    if store.embedded:
        try:
            store.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TrackingUnavailable(f"cannot create the MLflow folder {store.folder}: {exc.strerror}") from exc
    try:
        with _quick_http(timeout):
            MlflowClient(store.tracking_uri).search_experiments(max_results=1)
    except Exception as exc:
        hint = (
            "start the server or unset MLFLOW_TRACKING_URI to use the embedded store"
            if not store.embedded
            else "check ATTNLAB_MLFLOW_DIR"
        )
        raise TrackingUnavailable(
            f"cannot reach the MLflow tracking store {store.tracking_uri}: {_reason(exc)}; {hint}"
        ) from exc


def _error_code(exc: MlflowException) -> int:
    return ErrorCode.Value(exc.error_code) if isinstance(exc.error_code, str) else exc.error_code


def is_missing(exc: BaseException) -> bool:
    """True for MLflow's 'does not exist' errors (no such model, version, alias, run)."""
    return isinstance(exc, MlflowException) and _error_code(exc) == RESOURCE_DOES_NOT_EXIST


def experiment_name(task: str) -> str:
    """The default experiment of a task."""
    return f"attnlab-{task}"


def model_name(task: str) -> str:
    """The registered model of a task."""
    return f"attnlab-{task}"


def ensure_experiment(client: MlflowClient, name: str, store: Store) -> str:
    """The id of experiment ``name``, created (or restored) if needed. On the embedded store its
    artifacts go to ``<dir>/artifacts/<name>`` (else MLflow would use ``./mlruns``)."""
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        location = (store.artifact_root / name).as_uri() if store.embedded else None
        try:
            return client.create_experiment(name, artifact_location=location)
        except MlflowException as exc:  # created concurrently by another run
            if _error_code(exc) != RESOURCE_ALREADY_EXISTS:
                raise
            experiment = client.get_experiment_by_name(name)
    if experiment.lifecycle_stage == "deleted":
        client.restore_experiment(experiment.experiment_id)
    return experiment.experiment_id


def config_params(config: ExperimentConfig) -> dict[str, str]:
    """Every config field as an MLflow param string (dicts as sorted JSON)."""
    params = {}
    for key, value in config.model_dump(mode="json").items():
        params[key] = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
    return params


def run_tags(config: ExperimentConfig) -> dict[str, str]:
    """Tags that make runs easy to find in the UI."""
    return {"task": config.task, "scorer": config.scorer, "encoder": config.encoder, "decoder": config.decoder}


def start_run(
    client: MlflowClient, experiment_id: str, config: ExperimentConfig, extra_tags: dict[str, str] | None = None
) -> str:
    """Create a RUNNING run with the config as params, tags and config.yaml/config.json; its id."""
    name = f"{config.scorer}-{config.encoder}-{config.decoder}-seed{config.seed}"
    tags = {**run_tags(config), **(extra_tags or {})}
    run_id = client.create_run(experiment_id, run_name=name, tags=tags).info.run_id
    params = [Param(key, value) for key, value in config_params(config).items()]
    client.log_batch(run_id, params=params)
    import yaml  # lazy: only runs that start need it

    data = config.model_dump(mode="json")
    client.log_text(run_id, yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "config/config.yaml")
    client.log_dict(run_id, data, "config/config.json")
    return run_id


def log_epoch(client: MlflowClient, run_id: str, metrics: dict[str, float]) -> None:
    """One epoch's training and validation metrics, with step = epoch (MLflow draws the curves)."""
    step, now = int(metrics["epoch"]), int(time.time() * 1000)
    batch = [Metric(name, float(metrics[key]), now, step) for key, name in EPOCH_METRICS.items() if key in metrics]
    client.log_batch(run_id, metrics=batch)


def splits_frame(splits: Splits) -> pd.DataFrame:
    """All examples with their split: columns split, source, target."""
    rows = [(name, ex.source, ex.target) for name, examples in splits.items() for ex in examples]
    return pd.DataFrame(rows, columns=["split", "source", "target"])


def log_dataset(client: MlflowClient, run_id: str, config: ExperimentConfig, splits: Splits) -> None:
    """Each split as an MLflow dataset input (name, digest, schema, profile) and all of them as
    ``data/splits.csv``."""
    frame = splits_frame(splits)
    inputs = []
    for split, part in frame.groupby("split", sort=False):
        dataset = mlflow.data.from_pandas(
            part[["source", "target"]].reset_index(drop=True),
            name=f"{config.task}-{split}-seed{config.seed}",
            targets="target",
        )
        # MlflowClient.log_inputs takes entities; this is what mlflow.log_input does for the
        # active run, here for an explicit run id.
        inputs.append(DatasetInput(dataset._to_mlflow_entity(), [InputTag("mlflow.data.context", split)]))
    client.log_inputs(run_id, datasets=inputs)
    client.log_text(run_id, frame.to_csv(index=False), "data/splits.csv")


def evaluation_metrics(evaluation: Evaluation) -> dict[str, float]:
    """The evaluation's metrics named ``test_<name>``; NaN ones (e.g. alignment accuracy of a
    model without attention) are left out."""
    return {f"test_{k}": float(v) for k, v in evaluation.metrics.items() if not math.isnan(float(v))}


def sample_predictions(predictions: pd.DataFrame, rows: int = SAMPLE_ROWS) -> pd.DataFrame:
    """Up to ``rows`` predictions, the wrong ones first (stable order otherwise)."""
    return predictions.sort_values("correct", kind="stable").head(rows).reset_index(drop=True)


def log_evaluation(client: MlflowClient, run_id: str, evaluation: Evaluation, extra: dict[str, float]) -> None:
    """Test metrics, per-length accuracy (as metrics with step = shortest length of the bucket,
    so MLflow draws accuracy over length) and the tables per_length and predictions."""
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in {**evaluation_metrics(evaluation), **extra}.items()]
    for row in evaluation.per_length.itertuples(index=False):
        metrics.append(Metric("test_exact_match_by_length", float(row.exact_match), now, int(row.min_length)))
        metrics.append(Metric("test_char_accuracy_by_length", float(row.char_accuracy), now, int(row.min_length)))
    client.log_batch(run_id, metrics=metrics)
    client.log_table(run_id, evaluation.per_length, "tables/per_length.json")
    client.log_table(run_id, sample_predictions(evaluation.predictions), "tables/predictions.json")


def log_folder(client: MlflowClient, run_id: str, folder: Path, artifact_path: str) -> None:
    """Upload every file under ``folder`` to ``artifact_path`` of the run."""
    client.log_artifacts(run_id, str(folder), artifact_path)


def pip_requirements() -> list[str]:
    """The model's requirements, given explicitly (inferring them costs MLflow 8-10 s).

    ``attnlab`` is not on PyPI: serve with ``mlflow models serve --env-manager local`` from an
    environment where it is installed.
    """
    from importlib.metadata import PackageNotFoundError, version

    requirements = []
    for name in ("attnlab", "torch", "pydantic", "pandas", "mlflow"):
        try:
            requirements.append(f"{name}=={version(name).split('+')[0]}")
        except PackageNotFoundError:
            requirements.append(name)
    return requirements


def _versions_of_run(client: MlflowClient, name: str, run_id: str) -> list:
    try:
        return list(client.search_model_versions(f"name='{name}' and run_id='{run_id}'"))
    except MlflowException as exc:
        if is_missing(exc):
            return []
        raise


def log_model(
    client: MlflowClient, run_id: str, bundle: Path, config: ExperimentConfig, examples: list[str]
) -> tuple[str, str]:
    """Log the pyfunc model (``model``) of the run; its (model URI, LoggedModel id)."""
    from mlflow.models import Model, ModelSignature
    from mlflow.types import ColSpec, Schema

    from attnlab.flows import pyfunc

    # Created first so that it lands in the run's experiment: Model.log with only a run_id files
    # the LoggedModel under the process's default experiment instead.
    logged = mlflow.initialize_logged_model(
        name="model",
        source_run_id=run_id,
        experiment_id=client.get_run(run_id).info.experiment_id,
        tags=run_tags(config),
        params=config_params(config),
    )
    info = Model.log(
        artifact_path=None,
        name="model",
        flavor=mlflow.pyfunc,
        run_id=run_id,
        model_id=logged.model_id,
        python_model=pyfunc.MODEL_CODE,  # models from code: no pickle
        artifacts={pyfunc.BUNDLE: str(bundle)},
        pip_requirements=pip_requirements(),
        signature=ModelSignature(inputs=Schema([ColSpec("string", "source")]), outputs=Schema([ColSpec("string")])),
        input_example=pd.DataFrame({"source": examples}),
    )
    return info.model_uri, info.model_id


def ensure_registered_model(client: MlflowClient, name: str, task: str) -> None:
    """Create registered model ``name`` unless it exists (also when created concurrently)."""
    try:
        client.create_registered_model(
            name,
            description=f"attnlab models of the {task!r} task; alias {CHAMPION!r}: the winner of the last "
            f"retrain comparison on the benchmark set (or best {CHAMPION_METRIC} of attnlab train)",
        )
    except MlflowException as exc:
        if _error_code(exc) != RESOURCE_ALREADY_EXISTS:
            raise


def log_and_register_model(
    client: MlflowClient, run_id: str, bundle: Path, config: ExperimentConfig, score: float, examples: list[str]
) -> str:
    """Log the pyfunc model (``model``) of the run and register it as ``attnlab-<task>``; returns
    the version, tagged with the champion metric and the plugins. A retry reuses the version the
    run already has."""
    name = model_name(config.task)
    existing = _versions_of_run(client, name, run_id)
    tags = {CHAMPION_METRIC: repr(float(score)), **run_tags(config)}
    if existing:
        version = str(existing[0].version)
        for key, value in tags.items():
            client.set_model_version_tag(name, version, key, value)
        return version
    model_uri, model_id = log_model(client, run_id, bundle, config, examples)
    # Registered here rather than through log_model(registered_model_name=...), which prints
    # to stderr whatever the log level.
    ensure_registered_model(client, name, config.task)
    created = client.create_model_version(name, model_uri, run_id=run_id, tags=tags, model_id=model_id)
    return str(created.version)


def _score(client: MlflowClient, model_version) -> float:
    """The champion metric of a model version: its tag, else its run's metric, else -inf."""
    raw = model_version.tags.get(CHAMPION_METRIC)
    if raw is None and model_version.run_id:
        raw = client.get_run(model_version.run_id).data.metrics.get(CHAMPION_METRIC)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return -math.inf
    return -math.inf if math.isnan(value) else value


def champion_version(client: MlflowClient, name: str):
    """The model version holding the champion alias of registered model ``name``, or None
    (no such model, or no champion yet)."""
    try:
        version = client.get_registered_model(name).aliases.get(CHAMPION)
    except MlflowException as exc:
        if is_missing(exc):
            return None
        raise
    return None if version is None else client.get_model_version(name, str(version))


@dataclass(frozen=True)
class Promotion:
    """champion: the new version holds the alias now; previous: the alias holder before (version,
    score), None when there was none."""

    champion: bool
    champion_version: str
    previous: dict[str, Any] | None


def promote_if_better(client: MlflowClient, name: str, version: str, score: float) -> Promotion:
    """Move alias ``champion`` to ``version`` only when ``score`` beats the current champion's."""
    current = champion_version(client, name)
    if current is not None and str(current.version) == str(version):  # a retried promotion
        return Promotion(True, str(version), None)
    previous = None if current is None else {"version": str(current.version), CHAMPION_METRIC: _score(client, current)}
    if current is None or score > previous[CHAMPION_METRIC]:
        client.set_registered_model_alias(name, CHAMPION, str(version))
        return Promotion(True, str(version), previous)
    return Promotion(False, previous["version"], previous)


def end_run(
    client: MlflowClient,
    run_id: str,
    status: str,
    error: str | None = None,
    checkpoint: Path | None = None,
) -> None:
    """End the run as FINISHED, FAILED or KILLED; record the error and, when given and present,
    the last checkpoint (``checkpoint/``). Always tries to set the status, whatever fails first."""
    assert status in {RunStatus.to_string(s) for s in (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.KILLED)}
    try:
        if error:
            client.set_tag(run_id, "attnlab.error", error[:4000])
        if checkpoint is not None and checkpoint.exists():
            client.log_artifact(run_id, str(checkpoint), "checkpoint")
    finally:
        client.set_terminated(run_id, status)


def resolve_model_uri(model: str | None, task: str) -> str:
    """``model`` as given, or the champion of the task's registered model."""
    return model or f"models:/{model_name(task)}@{CHAMPION}"


def load_pyfunc(uri: str):
    """The attnlab pyfunc model at ``uri``; UserError when there is none (no registered model,
    no champion yet, unknown run or version)."""
    import mlflow.pyfunc

    try:
        return mlflow.pyfunc.load_model(uri)
    except MlflowException as exc:
        if is_missing(exc) or "not found" in str(exc).lower() or "does not exist" in str(exc).lower():
            raise UserError(f"no model at {uri} in {mlflow.get_tracking_uri()}: {_reason(exc)}") from exc
        raise
    except OSError as exc:
        raise UserError(f"no model at {uri}: {exc.strerror or exc}") from exc
