"""Tuning: what ``attnlab tune`` decides, pure and unit-tested: the search space read from YAML
and checked (``space``), the objective and its direction, the pruner, the study's name, the
budget, the best trial and the trials table (``trials``). Optuna itself is adapted in
``attnlab.flows``.

May import: :mod:`attnlab.lab` and the standard library (pydantic through the config). No torch,
no Optuna, nothing from MLflow or Prefect.
"""
