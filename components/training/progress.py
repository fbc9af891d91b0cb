"""Progress inside an epoch: what a training step reports, and when it is worth saying.

Training calls a :data:`StepCallback` after every optimisation step with a :class:`StepProgress`;
the policies here decide what to do with it, so that every caller (the CLI's bar and plain lines,
the MLflow step curve, :func:`attnlab.training.experiment.run_experiment`'s log lines) decides the same way:

- :class:`PeriodicLines` — when a plain progress line is due (every ``seconds`` or at each
  ``fraction`` of an epoch, whichever comes first);
- :class:`StepCurve` — the training loss averaged over every ``every`` steps, the points of a
  loss curve (see :func:`curve_interval`);
- :func:`step_line` and :func:`epoch_line` — the text of a line.

Nothing here knows about a terminal, Prefect or MLflow.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

#: The logger that progress lines go to (the CLI prints it; silence it with
#: ``logging.getLogger("attnlab.progress").setLevel(logging.WARNING)``).
PROGRESS_LOGGER = "attnlab.progress"

#: Points of the step curve per epoch (a default run stops after one epoch of 47 steps).
CURVE_POINTS_PER_EPOCH = 20


@dataclass(frozen=True)
class StepProgress:
    """Where training stands after one optimisation step.

    ``step`` counts from 1 within epoch ``epoch`` (of at most ``epochs``), which has ``steps``
    steps; ``global_step`` counts from 1 over the whole run (resumed epochs included).
    ``samples`` of the epoch's ``epoch_samples`` are done. ``loss`` is this step's batch loss,
    ``running_loss`` the epoch's mean so far (per sample); ``samples_per_second`` counts the
    epoch's optimisation time so far.
    """

    epoch: int
    epochs: int
    step: int
    steps: int
    global_step: int
    samples: int
    epoch_samples: int
    loss: float
    running_loss: float
    samples_per_second: float

    @property
    def fraction(self) -> float:
        """Share of the epoch done, 0..1."""
        return self.step / self.steps if self.steps else 1.0


#: Called after every optimisation step.
StepCallback = Callable[[StepProgress], None]


class PeriodicLines:
    """When a plain progress line is due: ``seconds`` after the last one, or when the epoch has
    passed the next multiple of ``fraction`` (so short epochs still show a few lines and long ones
    one every ``seconds``). The last step of an epoch is never due: the epoch's own line says it.

    ``due(progress, now)`` takes the time in seconds from any monotonic clock.
    """

    def __init__(self, seconds: float = 10.0, fraction: float = 0.25) -> None:
        self.seconds, self.fraction = seconds, fraction
        self._last_time: float | None = None
        self._last_mark = (0, 0)  # (epoch, index of the fraction mark last passed)

    def due(self, progress: StepProgress, now: float) -> bool:
        if self._last_time is None:
            self._last_time = now
        if progress.step >= progress.steps:
            return False
        mark = (progress.epoch, math.floor(progress.fraction / self.fraction + 1e-9))
        if mark[0] != self._last_mark[0]:
            self._last_mark = (mark[0], 0)
        if mark[1] > self._last_mark[1] or now - self._last_time >= self.seconds:
            self._last_mark, self._last_time = mark, now
            return True
        return False

    def reset_clock(self, now: float) -> None:
        """Another line was printed at ``now`` (an epoch line): count the seconds from there."""
        self._last_time = now


def curve_interval(steps_per_epoch: int, points: int = CURVE_POINTS_PER_EPOCH) -> int:
    """Steps between two points of the loss curve: about ``points`` points an epoch."""
    return max(1, steps_per_epoch // points)


class StepCurve:
    """The training loss averaged over every ``every`` steps (and over an epoch's last steps):
    ``add`` returns ``(global_step, mean loss)`` when a point is complete, else None."""

    def __init__(self, every: int) -> None:
        self.every = every
        self._losses: list[float] = []

    def add(self, progress: StepProgress) -> tuple[int, float] | None:
        self._losses.append(progress.loss)
        if len(self._losses) < self.every and progress.step < progress.steps:
            return None
        point = (progress.global_step, sum(self._losses) / len(self._losses))
        self._losses = []
        return point


def step_line(progress: StepProgress) -> str:
    """One plain progress line inside an epoch."""
    return (
        f"epoch {progress.epoch:>3}/{progress.epochs}  step {progress.step}/{progress.steps} "
        f"({progress.fraction:.0%})  train_loss {progress.running_loss:.4f}  "
        f"{progress.samples_per_second:,.0f} samples/s"
    )


def epoch_line(metrics: dict[str, float], epochs: int) -> str:
    """One progress line for an epoch's metrics."""
    return (
        f"epoch {int(metrics['epoch']):>3}/{epochs}  train_loss {metrics['train_loss']:.4f}  "
        f"val_loss {metrics['val_loss']:.4f}  val_exact_match {metrics['val_exact_match']:.4f}  "
        f"{metrics['seconds']:.1f} s ({metrics['samples_per_second']:,.0f} samples/s)"
    )
