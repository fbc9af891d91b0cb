"""Training: the loop (teacher forcing, clipping, early stopping), the loss, optimiser and
learning-rate schedule (``optimization``), which weights a run keeps (``selection``), what it
reports while it runs (``progress``, ``timing``, ``phase_lines``), the checks before a run starts
(``preflight``), and one experiment end to end without orchestration (``experiment``).

May import: :mod:`attnlab.data`, :mod:`attnlab.model`, :mod:`attnlab.evaluation`,
:mod:`attnlab.lab`, :mod:`attnlab.plugins`. Nothing from MLflow or Prefect.
"""
