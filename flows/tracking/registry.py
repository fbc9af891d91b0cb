"""attnlab's models in MLflow: the pyfunc model of a run, its registration as ``attnlab-<task>``,
the ``champion`` alias and loading a model back by URI.

Plain functions over an explicit :class:`~mlflow.MlflowClient` and run id. Who holds the alias is
decided by :mod:`attnlab.ops.promotion` (through :mod:`attnlab.flows.tracking.promote`), never here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from mlflow.exceptions import MlflowException

import mlflow
from attnlab.flows.tracking.errors import ModelUnusable, UserError
from attnlab.flows.tracking.store import already_exists, is_missing, reason
from mlflow import MlflowClient

if TYPE_CHECKING:  # torch comes with it: `attnlab predict` loads the registry before torch
    from mlflow.entities.model_registry import ModelVersion
    from mlflow.pyfunc import PyFuncModel

    from attnlab.flows.pyfunc import AttnlabModel
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.predictor import Predictor

CHAMPION = "champion"
#: A model version's own test score, kept as a tag for people browsing the registry (the alias
#: is decided on the benchmark, not on this).
TEST_SCORE_TAG = "test_exact_match"


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


def log_model(client: MlflowClient, run_id: str, bundle: Path, config: ExperimentConfig, examples: list[str]) -> tuple[str, str]:
    """Log the pyfunc model (``model``) of the run; its (model URI, LoggedModel id)."""
    import pandas as pd
    from mlflow.models import Model

    from attnlab.flows import pyfunc
    from attnlab.flows.tracking.runs import config_params, run_tags

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
        signature=pyfunc.signature(),  # with the beam_size param
        input_example=pd.DataFrame({"source": examples}),
    )
    return info.model_uri, info.model_id


def ensure_registered_model(client: MlflowClient, name: str, task: str) -> None:
    """Create registered model ``name`` unless it exists (also when created concurrently)."""
    try:
        client.create_registered_model(
            name,
            description=f"attnlab models of the {task!r} task; alias {CHAMPION!r}: the version that won the "
            "last promotion, decided on this model's fixed benchmark set (tag attnlab.benchmark_run_id)",
        )
    except MlflowException as exc:
        if not already_exists(exc):
            raise


def _versions_of_run(client: MlflowClient, name: str, run_id: str) -> list[ModelVersion]:
    try:
        return list(client.search_model_versions(f"name='{name}' and run_id='{run_id}'"))
    except MlflowException as exc:
        if is_missing(exc):
            return []
        raise


def log_and_register_model(
    client: MlflowClient, run_id: str, bundle: Path, config: ExperimentConfig, test_score: float, examples: list[str],
    extra_tags: dict[str, str] | None = None,
) -> str:  # fmt: skip
    """Log the pyfunc model (``model``) of the run and register it under the config's registered
    model name (:meth:`~attnlab.lab.config.ExperimentConfig.registered_model`); returns
    the version, tagged with its test score, the plugins and ``extra_tags``. A retry reuses the
    version the run already has."""
    from attnlab.flows.tracking.runs import run_tags

    name = config.registered_model()
    tags = {TEST_SCORE_TAG: repr(float(test_score)), **run_tags(config), **(extra_tags or {})}
    existing = _versions_of_run(client, name, run_id)
    if existing:
        version = str(existing[0].version)
        for key, value in tags.items():
            client.set_model_version_tag(name, version, key, value)
        return version
    model_uri, model_id = log_model(client, run_id, bundle, config, examples)
    # Registered here rather than through log_model(registered_model_name=...), which prints
    # to stderr whatever the log level.
    ensure_registered_model(client, name, config.task)
    return str(client.create_model_version(name, model_uri, run_id=run_id, tags=tags, model_id=model_id).version)


def champion_version(client: MlflowClient, name: str) -> ModelVersion | None:
    """The model version holding the champion alias of registered model ``name``, or None
    (no such model, or no champion yet)."""
    try:
        version = client.get_registered_model(name).aliases.get(CHAMPION)
    except MlflowException as exc:
        if is_missing(exc):
            return None
        raise
    return None if version is None else client.get_model_version(name, str(version))


def resolve_model_uri(model: str | None, name: str) -> str:
    """``model`` as given (UserError when it is empty or a malformed ``models:/``/``runs:/``
    URI, see :func:`attnlab.model.uri.check_model_uri`), or for None the champion of registered
    model ``name``."""
    from attnlab.model.uri import check_model_uri

    return f"models:/{name}@{CHAMPION}" if model is None else check_model_uri(model)


def load_predictor(uri: str) -> Predictor:
    """The :class:`~attnlab.model.predictor.Predictor` of the attnlab model at ``uri``, loaded and
    refused as :func:`load_pyfunc` loads and refuses it."""
    return load_attnlab_model(uri).predictor


def load_attnlab_model(uri: str) -> AttnlabModel:
    """The :class:`~attnlab.flows.pyfunc.AttnlabModel` at ``uri``, loaded and refused as
    :func:`load_pyfunc` loads and refuses it."""
    # load_pyfunc refuses every model whose code is not attnlab's pyfunc_model.py, which sets an
    # AttnlabModel: the unwrapped object is one.
    return cast("AttnlabModel", load_pyfunc(uri).unwrap_python_model())


def load_pyfunc(uri: str) -> PyFuncModel:
    """The attnlab pyfunc model at ``uri``; UserError when there is none (no registered model,
    no champion yet, unknown run or version), and when loading it would run code other than
    attnlab's own ``pyfunc_model.py`` (:func:`attnlab.flows.pyfunc.model_code_problem`): the
    model is downloaded and checked before MLflow runs anything in it. It is downloaded into a
    temporary folder, so loading writes nothing into the store (a read-only store serves); a
    registered version whose files are gone is named (:mod:`attnlab.flows.tracking.model_files`)."""
    import tempfile

    import mlflow.artifacts
    from mlflow.pyfunc import load_model

    from attnlab.flows.pyfunc import model_code_problem
    from attnlab.flows.tracking.model_files import missing_files

    try:
        with tempfile.TemporaryDirectory(prefix="attnlab-model-") as scratch:
            local = Path(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=scratch))
            problem = model_code_problem(local)
            if problem:
                raise ModelUnusable(missing_files(uri) or f"refusing to load the model at {uri}: {problem}; loading a model runs its code")
            return load_model(str(local))
    except MlflowException as exc:
        missing = missing_files(uri)
        if missing:
            raise ModelUnusable(missing) from exc
        if is_missing(exc) or "not found" in str(exc).lower() or "does not exist" in str(exc).lower():
            raise UserError(f"no model at {uri} in {mlflow.get_tracking_uri()}: {reason(exc)}") from exc
        raise
    except OSError as exc:
        missing = missing_files(uri)
        raise (ModelUnusable(missing) if missing else UserError(f"no model at {uri}: {exc.strerror or exc}")) from exc
