"""What every worker of a sweep or a tune would do at the start of its first run, done once by
the server process the workers are forked from (:data:`attnlab.flows.sweep.worker_pool.WORKER_MODULES`
names this module), so that each forked worker inherits it instead of paying it again:

- MLflow's SQL stores, which the first ``MlflowClient`` of a process on the embedded store
  imports (SQLAlchemy and MLflow's table models: about 1 CPU-s);
- MLflow's map from import names to installed distributions, which the first ``log_model`` of a
  process builds by reading every installed distribution's file list to check the model's
  requirements against the environment (about 1.2 CPU-s on this project's environment).

Importing it starts no thread and opens no file or connection that a fork would share.
"""

from __future__ import annotations

import mlflow.store.model_registry.sqlalchemy_store
import mlflow.store.tracking.sqlalchemy_store  # noqa: F401  (imported for the forked workers)
from mlflow.utils import requirements_utils

# Built through MLflow's own builder; a version of MLflow without it builds nothing here.
_build_package_map = getattr(requirements_utils, "_init_packages_to_modules_map", None)
if _build_package_map is not None:
    _build_package_map()
