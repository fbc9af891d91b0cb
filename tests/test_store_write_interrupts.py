"""A Ctrl-C or SIGTERM never cuts a write to the embedded store in half: a KeyboardInterrupt raised inside
SQLite's part of a write left that connection holding the database's write lock, and the run it
interrupted (and every other run of the store) could not be ended KILLED."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from attnlab.flows.run.store_writes import interrupts_held, tracked_write
from attnlab.flows.tracking.store import Store

EMBEDDED = Store("sqlite:////tmp/store/mlflow.db", Path("/tmp/store"))
SERVER = Store("http://127.0.0.1:5000")


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    """Ctrl-C raises KeyboardInterrupt, as in a command (an xdist worker ignores SIGINT)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _write_interrupted_midway(done: list[str]) -> None:
    """A write that receives Ctrl-C halfway through."""
    done.append("started")
    os.kill(os.getpid(), signal.SIGINT)
    done.append("finished")


def test_a_ctrl_c_during_a_write_to_the_embedded_store_comes_once_the_write_is_done():
    done: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        tracked_write(EMBEDDED, lambda: _write_interrupted_midway(done))
    assert done == ["started", "finished"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_during_a_request_to_a_tracking_server_comes_at_once():
    """A lost server's request retries for minutes: Ctrl-C must not wait for it."""
    done: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        tracked_write(SERVER, lambda: _write_interrupted_midway(done))
    assert done == ["started"]


def test_held_interrupts_reach_the_handler_in_place_once():
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        with interrupts_held():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            assert received == []
        assert received == [signal.SIGINT]
        with interrupts_held():
            pass
        assert received == [signal.SIGINT]  # nothing arrived, nothing delivered
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_sigterm_is_held_too_and_wins_over_a_ctrl_c():
    """A sweep stops its workers with SIGTERM; Prefect's handler raises inside whatever runs."""
    received: list[int] = []
    handlers = {number: signal.signal(number, lambda signum, frame: received.append(signum)) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        with interrupts_held():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
            assert received == []
        assert received == [signal.SIGTERM]
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)


def test_outside_the_main_thread_the_block_runs_as_is():
    """Signals reach the main thread only; a tune's trial threads write without holding anything."""
    seen: list[object] = []

    def in_a_thread() -> None:
        with interrupts_held():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]
