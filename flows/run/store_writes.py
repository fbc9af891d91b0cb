"""How a run writes to the store while it trains: whole, and named when the server is lost.

An exception raised by a signal's handler (a Ctrl-C's KeyboardInterrupt) inside SQLite's half of
a write leaves that connection holding the
database's write lock for as long as the interrupted frames live; every later write to the store,
from this process or any other, then waits 20 s and fails with ``database is locked``. A sweep
whose command was killed with SIGKILL interrupts all its workers at once: one worker cut
mid-write left both runs RUNNING, neither able to end its own. So a Ctrl-C or a SIGTERM waits for a
write to the embedded store to end (:func:`interrupts_held`); neither waits for a request to a
tracking server, which may retry for minutes.
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
    the server stopped answering (the run cannot be tracked any more). A Ctrl-C or SIGTERM waits
    for a write to the embedded store to end, not for a request to a server (which may retry for
    minutes)."""
    try:
        with interrupts_held(where.embedded):
            write()
    except Exception as exc:
        why = store.unreachable(where)
        if why is None:
            raise
        raise TrackingLost(f"lost the MLflow tracking server {where.tracking_uri} ({why})") from exc


#: The signals that stop a run (Ctrl-C; SIGTERM from a user, or from a sweep stopping its workers),
#: strongest first: of several held, the first here is delivered.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def interrupts_held(hold: bool = True) -> Iterator[None]:
    """Hold the stop signals (:data:`STOP_SIGNALS`) that arrive inside the block until it ends,
    then deliver the strongest to the handler that was in place. Only the main thread receives
    signals: elsewhere, where a handler was not installed from Python, and when not ``hold``,
    the block runs as is. A SIGKILL cannot be held, and needs not be: a process that dies
    releases its locks."""
    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    if not hold or threading.current_thread() is not threading.main_thread() or None in previous.values():
        yield
        return
    arrived: set[int] = set()
    for number in STOP_SIGNALS:
        signal.signal(number, lambda signum, frame: arrived.add(signum))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        held = [number for number in STOP_SIGNALS if number in arrived]
        if held:
            signal.raise_signal(held[0])
