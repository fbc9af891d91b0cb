"""The Python API's tracked path: train from a notebook or script exactly as ``attnlab train``
does, so the run shows up in the MLflow UI with everything the command logs.

:func:`attnlab.training.experiment.run_experiment` trains in-process and logs nothing; opt in to tracking by
calling :func:`train` instead::

    from attnlab.lab.config import ExperimentConfig
    from attnlab.flows.api import load_run_model, train

    summary = train(ExperimentConfig(scorer="additive"))   # the train flow, as the CLI runs it
    print(summary["run_id"], summary["metrics"]["test_exact_match"])
    config, task, model = load_run_model(summary["run_id"])  # then attnlab.model.predict.predict(model, task, [...])

The store is the CLI's (``MLFLOW_TRACKING_URI``, else ``ATTNLAB_MLFLOW_DIR`` or ``./mlflow``);
without ``PREFECT_API_URL`` the first call starts Prefect's temporary server, owned by this
process and reused by later calls. Per-epoch lines go to the ``attnlab.progress`` logger.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from attnlab.lab.config import ExperimentConfig

if TYPE_CHECKING:  # torch comes with them
    from attnlab.model.assembly import Seq2Seq
    from attnlab.model.predictor import Predictor
    from attnlab.plugins import Task


def _say(line: str) -> None:
    """A phase line (a large data file takes a while to check) on stderr, as the CLI prints it."""
    print(line, file=sys.stderr)


def train(
    config: ExperimentConfig | None = None,
    *,
    experiment: str | None = None,
    register: bool = True,
    promote: bool = True,
    **fields: Any,
) -> dict[str, Any]:
    """Run the train flow that ``attnlab train`` runs (data, training, evaluation, heatmaps, the
    attention explorer page, the model logged to MLflow; registered as ``attnlab-<task>`` when
    ``register``, given the champion alias by the one promotion rule when ``promote``) and return
    its summary: the fields of ``attnlab train --json`` (``run_id``, ``experiment``, ``metrics``,
    ``model``, ...).

    ``fields`` override fields of ``config`` (default: the defaults), validated like the CLI's
    ``-o``. Mistakes (an unknown plugin, a bad value, an unreachable store) raise
    :class:`attnlab.lab.errors.UserError` or pydantic's ValidationError before anything starts.
    """
    from attnlab.flows.services.prefect_server import start_in_background
    from attnlab.flows.tracking.store import check_store, resolve_store
    from attnlab.training.preflight import check_config, check_start

    base = config or ExperimentConfig()
    if fields:
        base = ExperimentConfig.model_validate({**base.model_dump(), **fields})
    server = start_in_background()  # None when Prefect has an API URL or this process a server
    try:
        check_start(base, experiment)
        check_config(base, _say)
        check_store(resolve_store())
    except BaseException:
        if server is not None:
            server.stop()
        raise
    from attnlab.flows.run.train_flow import train_flow

    if server is not None:
        server.wait()

    return train_flow(config=base, experiment=experiment, register_model=register, promote=promote)


def load_run_model(run_id: str) -> tuple[ExperimentConfig, Task, Seq2Seq]:
    """(config, task plugin, Seq2Seq) of the model logged by run ``run_id`` (``runs:/<id>/model``),
    loaded as ``attnlab predict`` loads an MLflow model (see :func:`load_run_predictor`)."""
    predictor = load_run_predictor(run_id)
    return predictor.config, predictor.task, predictor.model


def load_run_predictor(run_id: str) -> Predictor:
    """The :class:`~attnlab.model.predictor.Predictor` of the model logged by run ``run_id``,
    loaded from the store checked for reading, through
    :func:`attnlab.flows.tracking.registry.load_pyfunc` (which refuses foreign model code)."""
    from attnlab.flows.tracking.registry import load_predictor
    from attnlab.flows.tracking.store import check_store, resolve_store, use_store

    store = resolve_store()
    check_store(store, writable=False)
    use_store(store)
    return load_predictor(f"runs:/{run_id}/model")
