"""Prefect flows and tasks over attnlab's components; all MLflow calls live here.

Modules, one job each: ``store`` (where MLflow lives, whether it answers), ``tracking`` (what a
run logs), ``model_registry`` (the pyfunc model, registration, the champion alias),
``benchmark_store`` (a registered model's benchmark set in MLflow), ``promotion`` and
``promotion_lock`` (the one promotion rule applied in MLflow, under one lock per model),
``flow_runs`` (flow-run tags, how an exception ends a run), ``pyfunc`` (the MLflow model that
serves text), ``tasks`` (thin Prefect tasks), ``train_flow``, ``sweep_flow`` and ``retrain_flow``
(the wiring), ``servers`` and ``prefect_server`` (server processes), ``cli`` (the ``attnlab``
command; ``train_cli``, ``predict_cli``, ``plugins_cli``, ``sweep_cli`` and ``service_cli`` add
its commands; ``cli_support`` what they share). Decisions and pure logic live in the core
library (``attnlab.ops.promotion``, ``attnlab.evaluation.benchmark``, ``attnlab.lab.config_sources``, ...).

Importing this package turns Prefect's and MLflow's telemetry (and MLflow's run links on stdout)
off and bounds MLflow's HTTP retries unless the user already set the variables
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
