"""Prefect flows and tasks over attnlab's components; all MLflow calls live here.

Modules: ``tracking`` (where MLflow lives and everything a run logs), ``pyfunc`` (the MLflow
model that serves text), ``tasks`` (thin Prefect tasks), ``train_flow``, ``sweep_flow`` and
``retrain_flow`` (the wiring), ``promotion`` (the retrain's benchmark and champion decision),
``servers`` (local server processes), ``cli`` (the ``attnlab`` command; ``sweep_cli`` and
``service_cli`` add commands).

Importing this package turns Prefect's and MLflow's telemetry (and MLflow's run links on stdout)
off unless the user already set the variables (``DO_NOT_TRACK=false`` etc. turn it back on). It must run before prefect or mlflow read
their settings, so this file imports neither.
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
}

for _name, _value in ENV_DEFAULTS.items():
    os.environ.setdefault(_name, _value)
