"""The training loss inside epochs, as an MLflow metric curve (``train_loss_step``).

The points (:class:`attnlab.training.progress.StepCurve`: the loss averaged over every N steps, N from
:func:`attnlab.training.progress.curve_interval`, MLflow's step = the run's optimisation step) are kept
in memory and written with one ``log_batch`` at the end of every epoch, and during a long epoch
every ``flush_seconds``: a run gets a curve, not a dot, even when it stops after one epoch.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mlflow.entities import Metric

from attnlab.training.progress import StepCurve, StepProgress, curve_interval
from mlflow import MlflowClient

#: The metric's name in MLflow.
STEP_METRIC = "train_loss_step"
#: MLflow's most metrics in one log_batch request.
BATCH_LIMIT = 1000


class StepLog:
    """Buffers the step curve's points of run ``run_id``; :meth:`flush` writes them."""

    def __init__(self, client: MlflowClient, run_id: str, flush_seconds: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.client, self.run_id, self.flush_seconds, self.clock = client, run_id, flush_seconds, clock
        self._curve: StepCurve | None = None
        self._points: list[Metric] = []
        self._flushed = clock()

    def add(self, progress: StepProgress) -> None:
        """Hear of one step; writes the buffer when ``flush_seconds`` have passed since the last."""
        if self._curve is None:
            self._curve = StepCurve(curve_interval(progress.steps))
        point = self._curve.add(progress)
        if point is not None:
            self._points.append(Metric(STEP_METRIC, point[1], int(time.time() * 1000), point[0]))
            if self.clock() - self._flushed >= self.flush_seconds:
                self.flush()

    def flush(self) -> None:
        """Write the buffered points (one request per BATCH_LIMIT points)."""
        points, self._points = self._points, []
        self._flushed = self.clock()
        for start in range(0, len(points), BATCH_LIMIT):
            self.client.log_batch(self.run_id, metrics=points[start : start + BATCH_LIMIT])
