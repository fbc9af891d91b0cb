"""A worker whose command was killed with SIGKILL interrupts itself, and never inside a write to
the embedded store: an interrupt raised inside SQLite's part of a write left that connection
holding the database's write lock, and no run of the store could be ended KILLED."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from attnlab.flows.run.store_writes import WRITING, tracked_write
from attnlab.flows.sweep.worker_pool import interrupt_outside_writes
from attnlab.flows.tracking.store import Store

EMBEDDED = Store("sqlite:////tmp/store/mlflow.db", Path("/tmp/store"))


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt, as in a worker (an xdist worker may be ignoring it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_the_self_interrupt_waits_for_a_write_under_way_to_end():
    done: list[str] = []
    interrupter = threading.Thread(target=interrupt_outside_writes)

    def write() -> None:
        interrupter.start()
        interrupter.join(0.3)  # the interrupter waits for this write: nothing interrupts the join
        done.append("written")

    with pytest.raises(KeyboardInterrupt):
        tracked_write(EMBEDDED, write)
        interrupter.join()  # the interrupt lands here at the latest
    interrupter.join()
    assert done == ["written"]
    assert not WRITING.locked()


def test_a_write_to_a_tracking_server_does_not_hold_the_lock():
    """A request to a lost server may retry for minutes: it must not keep the worker from stopping."""
    seen: list[bool] = []
    tracked_write(Store("http://127.0.0.1:5000"), lambda: seen.append(WRITING.locked()))
    tracked_write(EMBEDDED, lambda: seen.append(WRITING.locked()))
    assert seen == [False, True]
