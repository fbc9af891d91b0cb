"""Training: the loop (teacher forcing, Adam, clipping, early stopping), what it reports while it
runs (``progress``, ``timing``), how many threads it may use (``threads``), and one experiment end
to end without orchestration (``experiment``).

May import: :mod:`attnlab.data`, :mod:`attnlab.model`, :mod:`attnlab.evaluation`,
:mod:`attnlab.lab`, :mod:`attnlab.plugins`. Nothing from MLflow or Prefect.
"""
