"""One train run from start to end, in the order it happens: the train flow (``train_flow``)
reopens a stopped run to resume it (``resume_run``) or starts a new one, runs its steps inside it
(``run_steps``: data, training, evaluation, figures, logging, the model's way into the registry)
and ends it (``run_closing``: FINISHED, FAILED, KILLED or left RUNNING after a lost server). Each
step is a Prefect task of ``steps`` or ``model_steps``; ``epoch_hooks`` lets a caller hear each
epoch (a tune's pruner); ``flow_runs`` holds what every attnlab flow does the same way (the tags
linking an MLflow run to its Prefect flow run, how an exception ends a run).

May import: :mod:`attnlab.flows.tracking`, :mod:`attnlab.flows.services`, the core, Prefect and
MLflow; not the sweep, tune or retrain flows, the Python API or the command line above it.
"""
