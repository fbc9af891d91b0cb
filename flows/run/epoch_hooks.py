"""Listeners of a train run's epochs besides its own logging: ``attnlab tune`` reports each
epoch's validation score to its study and stops a trial its pruner gives up on.

A listener is set for the calls made inside :func:`listening` (a context variable: each thread
of a thread pool, each worker process, has its own), and hears ``(run_id, metrics)`` after the
epoch was logged (:func:`attnlab.flows.run.steps.train`); an exception it raises stops the training.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: Hears the run id and one epoch's metrics (see :data:`attnlab.training.loop.EpochCallback`).
EpochListener = Callable[[str, dict[str, float]], None]

_listener: ContextVar[EpochListener | None] = ContextVar("attnlab_epoch_listener", default=None)


@contextmanager
def listening(listener: EpochListener) -> Iterator[None]:
    """Let ``listener`` hear every epoch of the runs trained inside the block."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def notify(run_id: str, metrics: dict[str, float]) -> None:
    """Tell the listener of this context, if any, that run ``run_id`` finished an epoch."""
    listener = _listener.get()
    if listener is not None:
        listener(run_id, metrics)
