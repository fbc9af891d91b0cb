"""How a run writes to the store while it trains: whole, and named when the server is lost.

An interrupt raised inside SQLite's half of a write leaves that connection holding the
database's write lock for as long as the interrupted frames live; every later write to the store,
from this process or any other, then waits 20 s and fails with ``database is locked``. A sweep
whose command was killed with SIGKILL interrupts all its workers at once: one worker cut
mid-write left both runs RUNNING, neither able to end its own. So a write to the embedded store
holds :data:`WRITING`, and a worker whose command is gone interrupts itself only while holding it
(:func:`attnlab.flows.sweep.worker_pool.interrupt_outside_writes`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from attnlab.flows.tracking import store
from attnlab.flows.tracking.errors import TrackingLost

#: Held by this process's writes to the embedded store while training.
WRITING = threading.Lock()


def tracked_write(where: store.Store, write: Callable[[], object]) -> None:
    """``write()``, holding :data:`WRITING` when ``where`` is the embedded store; TrackingLost
    naming the tracking server of ``where`` when it failed because the server stopped answering
    (the run cannot be tracked any more)."""
    try:
        with WRITING if where.embedded else contextlib.nullcontext():
            write()
    except Exception as exc:
        why = store.unreachable(where)
        if why is None:
            raise
        raise TrackingLost(f"lost the MLflow tracking server {where.tracking_uri} ({why})") from exc
