"""How ``attnlab train`` shows training on stderr: the ``attnlab.progress`` lines (one per
epoch), and inside an epoch a live progress bar on a terminal (rich: step, samples/s, running
loss, time left) or, when stderr is not a terminal or with ``--json``, a plain line every 10 s or
at each quarter of the epoch (:class:`attnlab.training.progress.PeriodicLines`).

Steps arrive as records of the ``attnlab.training.progress.steps`` logger carrying ``step_progress`` (see
:func:`attnlab.flows.run.steps.train`); stdout is never written.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING, TextIO

from attnlab.training.progress import PeriodicLines, StepProgress, step_line

if TYPE_CHECKING:  # rich is imported when a bar is first drawn
    from rich.progress import Progress, TaskID


class ProgressDisplay(logging.Handler):
    """A logging handler: plain records become lines, step records move the bar (``live``) or
    print a periodic line. The bar lives while an epoch's steps run: a plain line (the epoch's)
    and :meth:`close` take it off the screen."""

    def __init__(self, live: bool, stream: TextIO | None = None) -> None:
        super().__init__()
        self.stream = stream or sys.stderr
        self.live = live
        self.lines = PeriodicLines()
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._epoch: int | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            step = getattr(record, "step_progress", None)
            if step is None:
                self._line(record.getMessage())
                self.lines.reset_clock(time.monotonic())
            elif self.live:
                self._advance(step)
            elif self.lines.due(step, time.monotonic()):
                self._line(step_line(step))
        except Exception:  # noqa: BLE001  logging's rule: a display problem never stops training
            self.handleError(record)

    def _line(self, text: str) -> None:
        self._stop_bar()  # an epoch's line ends its bar; the next epoch's first step draws another
        self.stream.write(text + "\n")
        self.stream.flush()

    def _stop_bar(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar, self._task, self._epoch = None, None, None

    def _advance(self, step: StepProgress) -> None:
        bar = self._bar
        if bar is None:
            bar = self._bar = _make_bar(self.stream)
            bar.start()
        task = self._task
        if task is None or step.epoch != self._epoch:  # a resumed or interrupted epoch: start its own bar
            if task is not None:
                bar.remove_task(task)
            self._epoch = step.epoch
            task = self._task = bar.add_task(f"epoch {step.epoch}/{step.epochs}", total=step.steps, loss=float("nan"), rate=0.0)
        bar.update(task, completed=step.step, loss=step.running_loss, rate=step.samples_per_second)

    def close(self) -> None:
        self._stop_bar()
        super().close()


def _make_bar(stream: TextIO) -> Progress:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("steps  train_loss {task.fields[loss]:.4f}  {task.fields[rate]:,.0f} samples/s"),
        TimeRemainingColumn(),
        console=Console(file=stream),
        transient=True,
        redirect_stdout=False,
        redirect_stderr=True,
    )
