"""Prefect flows and tasks over attnlab's components; all MLflow calls live here.

One subpackage per job: ``run`` (one train run from start to end: the train flow, its steps,
its Prefect tasks, how it ends), ``sweep`` (``attnlab sweep``), ``tune`` (``attnlab tune``),
``cli`` (the ``attnlab`` command), ``tracking`` (every MLflow call: the store, runs, the
registry, promotion) and ``services`` (server processes). At the top stays what is named by its
path from outside: ``api`` (the Python API's tracked path), ``pyfunc`` (the MLflow model that
serves text; every logged model's ``pyfunc_model.py`` imports it) and ``retrain_flow`` (the
scheduled retrain; Prefect deployments name it as their entrypoint). Decisions and pure logic
live in the core library (``attnlab.ops.promotion``, ``attnlab.evaluation.benchmark``,
``attnlab.lab.config_sources``, ...); docs/architecture.md maps where each one lives.

Importing this package turns Prefect's and MLflow's telemetry (and MLflow's run links on stdout)
off, bounds MLflow's HTTP retries and shortens OpenMP's spin of idle threads unless the user
already set the variables
(``DO_NOT_TRACK=false``, ``MLFLOW_HTTP_REQUEST_MAX_RETRIES=7`` etc. win). It must run before
prefect or mlflow read their settings, so this file imports neither.
"""

import os

#: Environment defaults of the product; a value the user set always wins.
ENV_DEFAULTS = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "true",
    # MLflow writes "View run ... at" to stdout when a run on a tracking server ends, which would
    # break `--json` output; the CLI says where the runs are itself.
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    # Reading a run's small tables (a paired test's outcomes) would draw a progress bar on stderr.
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    # A bounded retry budget for a tracking server: MLflow's defaults (7 retries with back-off
    # factor 2, 120 s per request) keep one call retrying for minutes after the server died.
    # Here a call to a dead server gives up after ~6-9 s (retries after 0, 2 and 4 s), a task
    # retried by Prefect after ~30 s, so a lost server ends a command within a minute.
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "15",
}

for _name, _value in ENV_DEFAULTS.items():
    os.environ.setdefault(_name, _value)


def _wait_briefly() -> None:
    """torch's idle threads spin only briefly before they sleep (OpenMP reads it when torch loads;
    :func:`attnlab.ops.threads.wait_settings`, which imports nothing heavy)."""
    from attnlab.ops.threads import wait_settings

    os.environ.update(wait_settings(os.environ))


_wait_briefly()
