"""``attnlab tune``: the tune flow (``tune_flow``) runs one train flow per Optuna trial on the
sweep's task runners; the study, where it is stored and how a trial reports its epochs
(``tune_study``), the ask-and-tell loop (``tune_jobs``) and what the tune leaves on its parent run
(``tune_results``).

May import: the single run (:mod:`attnlab.flows.run`), the sweep's runners and workers
(:mod:`attnlab.flows.sweep`), :mod:`attnlab.flows.tracking`, :mod:`attnlab.flows.services`, the
core, Optuna, Prefect and MLflow; not the Python API or the command line above it.
"""
