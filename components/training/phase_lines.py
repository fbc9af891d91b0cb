"""A line every so often while a long phase of a run goes on (reading a large file, evaluating a
large test split, logging many artifacts), so that a command never sits silent for minutes.

Training reports its own progress step by step (:mod:`attnlab.training.progress`); the phases of
:data:`PHASES` only say that they are still going and for how long. Nothing is said of a phase
shorter than :data:`QUIET_SECONDS`, nor of one :data:`PHASES` does not name.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: A phase shorter than this says nothing.
QUIET_SECONDS = 5.0
#: Then one line every this many seconds.
EVERY_SECONDS = 15.0
#: What each phase of a train run is called in its lines (see :mod:`attnlab.flows.run.run_steps`).
PHASES = {
    "check": "reading the task's data",
    "start": "starting Prefect's server",
    "data": "preparing the data",
    "evaluate": "evaluating on the test split",
    "plot": "drawing the attention heatmaps",
    "explorer": "writing the attention explorer",
    "log": "logging the results to MLflow",
    "register": "logging and registering the model",
    "promote": "scoring the model on the benchmark",
}


def still_line(phase: str, seconds: float) -> str:
    """``evaluating on the test split: 20 s so far``."""
    return f"{PHASES[phase]}: {seconds:.0f} s so far"


@contextmanager
def phase_lines(phase: str, say: Callable[[str], None], quiet: float = QUIET_SECONDS, every: float = EVERY_SECONDS) -> Iterator[None]:
    """While the block runs, after ``quiet`` seconds and then every ``every`` seconds, ``say`` the
    :func:`still_line` of ``phase`` (from a thread of its own, ended with the block); nothing for
    a phase that :data:`PHASES` does not name."""
    if phase not in PHASES:
        yield
        return
    done = threading.Event()
    started = time.monotonic()

    def tick() -> None:
        wait = quiet
        while not done.wait(wait):
            say(still_line(phase, time.monotonic() - started))
            wait = every

    ticker = threading.Thread(target=tick, name=f"attnlab-phase-{phase}", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
