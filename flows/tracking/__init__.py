"""Everything attnlab writes to or reads from MLflow: the store and its guards (``store``,
``store_guard``, ``store_home``), what a run logs (``runs``, ``step_log``), the registry and the
champion (``registry``, ``promote``, ``promotion_lock``, ``benchmark_store``, ``champion_tag``,
``champion_config``, ``prune``, ``model_files``), sweep reruns and the UI's saved views.

May import: the core (``attnlab.*``), MLflow, the MLflow model (:mod:`attnlab.flows.pyfunc`) and
Prefect's client where a lock or a lost worker's flow run needs it; not the flows above it nor
:mod:`attnlab.flows.services`. Decisions come from :mod:`attnlab.ops`.
"""
