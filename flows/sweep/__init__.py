"""``attnlab sweep``: the sweep flow (``sweep_flow``) runs one train flow per combination and seed,
hands the runs to a task runner and reports each (``sweep_jobs``) on worker processes that die
alone (``worker_pool``), shows every run the same inputs (``sweep_inputs``) and writes the
comparison to its parent run (``sweep_parent``), with each arm marked against the best
(``sweep_significance``).

May import: the single run (:mod:`attnlab.flows.run`), :mod:`attnlab.flows.tracking`,
:mod:`attnlab.flows.services`, the core, Prefect and MLflow; not the tune or retrain flows, the
Python API or the command line above it.
"""
