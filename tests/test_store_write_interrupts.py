"""A worker whose command was killed with SIGKILL interrupts itself, and never inside a write to
the embedded store: an interrupt raised inside SQLite's part of a write left that connection
holding the database's write lock, and no run of the store could be ended KILLED. A Ctrl-C or
SIGTERM that lands inside a write of the main thread is raised once that write has ended."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from attnlab.flows.cli.support import interrupts_quietly
from attnlab.flows.run.store_writes import WRITING, tracked_write
from attnlab.flows.sweep import worker_pool
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


@pytest.fixture(params=["command, Ctrl-C", "command, SIGTERM", "worker, Ctrl-C"])
def interrupt(request, monkeypatch):
    """The signal to send, handled as a command does while it trains (``attnlab train``'s
    handlers of SIGINT and SIGTERM), or as a sweep's or tune's worker does while it runs a task
    (its SIGINT handler; SIGTERM is left to Prefect there)."""
    if request.param.startswith("command"):
        with interrupts_quietly():
            yield signal.SIGTERM if request.param.endswith("SIGTERM") else signal.SIGINT
    else:
        monkeypatch.setattr(worker_pool, "_busy", True)
        monkeypatch.setattr(worker_pool, "_interrupted", False)
        signal.signal(signal.SIGINT, worker_pool._on_interrupt)
        yield signal.SIGINT


def test_an_interrupt_during_a_write_is_raised_once_the_write_has_ended(interrupt):
    done: list[str] = []

    def write() -> None:
        os.kill(os.getpid(), interrupt)  # its handler runs here, inside the write
        done.append("written")

    with pytest.raises(KeyboardInterrupt):
        tracked_write(EMBEDDED, write)
    assert done == ["written"]
    assert not WRITING.locked()
    done.clear()
    tracked_write(EMBEDDED, lambda: done.append("next"))  # nothing is left pending
    assert done == ["next"]


def test_an_interrupt_outside_a_write_is_raised_at_once(interrupt):
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), interrupt)
        threading.Event().wait(60)  # a hang guard only: the interrupt lands at once
