"""Evaluation: metrics of a split (``metrics``), the edit-distance error rates (``edit_distance``),
alignment and erasure measures (``alignment``, ``erasure``), a registered model's fixed benchmark
and whether a model can be measured on it (``benchmark``), and comparisons of runs (``compare``
for sweeps, ``run_compare`` for ``attnlab compare``).

May import: :mod:`attnlab.data`, :mod:`attnlab.model`, :mod:`attnlab.lab`, :mod:`attnlab.plugins`.
Nothing from MLflow or Prefect.
"""
