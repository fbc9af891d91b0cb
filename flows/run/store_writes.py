"""How a run writes to the store while it trains: whole, and named when the server is lost.

A KeyboardInterrupt raised inside SQLite's half of a write leaves that connection holding the
database's write lock for as long as the interrupted frames live; every later write to the store,
from this process or any other, then waits 20 s and fails with ``database is locked``. A sweep
whose command was killed with SIGKILL interrupts all its workers at once: one worker cut
mid-write left both runs RUNNING, neither able to end its own. So a Ctrl-C waits for a write to
the embedded store to end (:func:`interrupts_held`); it does not wait for a request to a tracking
server, which may retry for minutes.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from attnlab.flows.tracking import store
from attnlab.flows.tracking.errors import TrackingLost


def tracked_write(where: store.Store, write: Callable[[], object]) -> None:
    """``write()``; TrackingLost naming the tracking server of ``where`` when it failed because
    the server stopped answering (the run cannot be tracked any more). A Ctrl-C waits for a write
    to the embedded store to end, not for a request to a server (which may retry for minutes)."""
    try:
        with interrupts_held(where.embedded):
            write()
    except Exception as exc:
        why = store.unreachable(where)
        if why is None:
            raise
        raise TrackingLost(f"lost the MLflow tracking server {where.tracking_uri} ({why})") from exc


@contextmanager
def interrupts_held(hold: bool = True) -> Iterator[None]:
    """Hold a Ctrl-C that arrives inside the block until the block ends, then deliver it to the
    handler that was in place (once, however many arrived). Only the main thread receives
    signals: elsewhere, where that handler was not installed from Python, and when not ``hold``,
    the block runs as is."""
    previous = signal.getsignal(signal.SIGINT)
    if not hold or threading.current_thread() is not threading.main_thread() or previous is None:
        yield
        return
    arrived: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: arrived.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if arrived:
            signal.raise_signal(signal.SIGINT)
