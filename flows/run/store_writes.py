"""How a run writes to the store while it trains: whole, and named when the server is lost.

An interrupt raised inside SQLite's half of a write leaves that connection holding the
database's write lock for as long as the interrupted frames live; every later write to the store,
from this process or any other, then waits 20 s and fails with ``database is locked``. A sweep
whose command was killed with SIGKILL interrupts all its workers at once: one worker cut
mid-write left both runs RUNNING, neither able to end its own. So a write to the embedded store
holds :data:`WRITING`, and a worker whose command is gone interrupts itself only while holding it
(:func:`attnlab.flows.sweep.worker_pool.interrupt_outside_writes`). A Ctrl-C or SIGTERM that
lands while the main thread writes waits for that write the same way (:func:`defer_interrupt`):
one that cut into a write of a tune's trial kept the trial's next write, its KILLED status, waiting
20 s for the lock and printing MLflow's traceback.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from attnlab.flows.tracking import store
from attnlab.flows.tracking.errors import TrackingLost

#: Held by this process's writes to the embedded store while training.
WRITING = threading.Lock()
#: True while this process's main thread (where signal handlers run) writes to the embedded store.
_main_writing = False
#: A Ctrl-C or SIGTERM that came during such a write: raised once the write has ended.
_deferred = False


def defer_interrupt() -> bool:
    """For a Ctrl-C or SIGTERM handler, before it raises KeyboardInterrupt: True when the main
    thread is inside a write to the embedded store, which then ends first; :func:`tracked_write`
    raises the interrupt right after it."""
    global _deferred
    if _main_writing:
        _deferred = True
    return _main_writing


def tracked_write(where: store.Store, write: Callable[[], object]) -> None:
    """``write()``, holding :data:`WRITING` when ``where`` is the embedded store; TrackingLost
    naming the tracking server of ``where`` when it failed because the server stopped answering
    (the run cannot be tracked any more). An interrupt deferred meanwhile is raised at the end."""
    global _main_writing, _deferred
    in_main = where.embedded and threading.current_thread() is threading.main_thread()
    try:
        with WRITING if where.embedded else contextlib.nullcontext():
            _main_writing = in_main
            try:
                write()
            finally:
                _main_writing = False
    except Exception as exc:
        why = store.unreachable(where)
        if why is None:
            raise
        raise TrackingLost(f"lost the MLflow tracking server {where.tracking_uri} ({why})") from exc
    finally:
        if in_main and _deferred:
            _deferred = False
            raise KeyboardInterrupt
