"""A Ctrl-C that lands in a sweep's or a tune's worker process must travel back to the parent:
the exception a worker sends is pickled with its context (tblib's pickling support, which Dask
installs), and an interrupt that cut into library code can carry a context that does not pickle."""

import pickle
import weakref
from types import SimpleNamespace

import pytest
from tblib import pickling_support

from attnlab.flows.run.flow_runs import interrupt_alone


class _Registered:
    pass


@pytest.fixture(autouse=True)
def _not_left_interrupted():
    """A worker's interrupt quiets SQLAlchemy's pools for the rest of its process
    (attnlab.flows.tracking.query_interrupts); this process goes on running other tests."""
    import logging

    pools = logging.getLogger("sqlalchemy.pool")
    level = pools.level
    yield
    pools.setLevel(level)


def _interrupted_inside_a_lookup() -> None:
    try:
        raise KeyError(weakref.ref(_Registered))  # as in SQLAlchemy's first use of a class
    except KeyError:
        raise KeyboardInterrupt from None


@pytest.fixture
def exceptions_pickled_with_their_context():
    pickling_support.install()
    yield
    import copyreg

    for cls in list(copyreg.dispatch_table):
        if isinstance(cls, type) and issubclass(cls, BaseException) or cls.__name__ == "traceback":
            del copyreg.dispatch_table[cls]


def test_an_interrupt_comes_out_of_a_worker_without_what_it_interrupted(exceptions_pickled_with_their_context):
    with pytest.raises(KeyboardInterrupt) as raised:
        _interrupted_inside_a_lookup()
    with pytest.raises(TypeError, match="weakref"):
        pickle.dumps(raised.value)  # the failure the worker would die of

    with pytest.raises(KeyboardInterrupt) as raised:
        interrupt_alone(_interrupted_inside_a_lookup)
    assert isinstance(pickle.loads(pickle.dumps(raised.value)), KeyboardInterrupt)


def test_an_interrupt_comes_out_of_a_worker_without_the_frames_it_cut_into():
    """Prefect's worker turns the interrupt into ``SystemExit`` raised while handling it, whose
    pickling (tblib's) carries the interrupt's traceback: one frame of unknown line in it (in
    SQLAlchemy's compiled statements) failed that pickling, and the worker died printing it."""
    import traceback

    def cut_into() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as raised:
        interrupt_alone(cut_into)
    assert [frame.name for frame in traceback.extract_tb(raised.value.__traceback__)][-1] == "interrupt_alone"


def test_other_errors_keep_their_context():
    def fails() -> None:
        try:
            raise KeyError("config")
        except KeyError as exc:
            raise ValueError("bad config") from exc

    with pytest.raises(ValueError) as raised:
        interrupt_alone(fails)
    assert isinstance(raised.value.__cause__, KeyError)
    assert interrupt_alone(lambda: 7) == 7


def test_a_busy_worker_is_interrupted_once_and_an_idle_one_ends_quietly(monkeypatch):
    """A Ctrl-C reaches every process of the terminal's group, and a stopping sweep or tune
    interrupts its workers again until they exit: a second interrupt while a run ends KILLED
    would cut into that ending. (That the workers start with this handler: test_collector_pace.py.)"""
    import signal

    from attnlab.flows.sweep import worker_pool

    monkeypatch.setattr(worker_pool, "_busy", True)
    monkeypatch.setattr(worker_pool, "_interrupted", False)
    with pytest.raises(KeyboardInterrupt):
        worker_pool._on_interrupt(signal.SIGINT, None)
    try:
        worker_pool._on_interrupt(signal.SIGINT, None)  # the run is ending: ignored
    except KeyboardInterrupt:  # caught here: one left to pytest would stop the whole run
        pytest.fail("a second interrupt cut into the ending of the run the first one stopped")
    monkeypatch.setattr(worker_pool, "_busy", False)
    with pytest.raises(SystemExit) as ended:  # multiprocessing ends the worker on it, printing nothing
        worker_pool._on_interrupt(signal.SIGINT, None)
    assert ended.value.code == 128 + signal.SIGINT


def test_an_interrupt_lost_in_a_finalizer_is_raised_again_by_the_next_one(monkeypatch, capsys):
    import signal
    import sys

    from attnlab.flows.sweep import worker_pool

    monkeypatch.setattr(worker_pool, "_busy", True)
    monkeypatch.setattr(worker_pool, "_interrupted", False)
    with pytest.raises(KeyboardInterrupt) as lost:
        worker_pool._on_interrupt(signal.SIGINT, None)
    worker_pool._quiet_unraisable(SimpleNamespace(exc_type=KeyboardInterrupt, exc_value=lost.value))
    assert capsys.readouterr().err == ""
    with pytest.raises(KeyboardInterrupt):
        worker_pool._on_interrupt(signal.SIGINT, None)
    printed: list[object] = []
    monkeypatch.setattr(sys, "__unraisablehook__", printed.append)
    other = SimpleNamespace(exc_type=ValueError, exc_value=ValueError("kept"))
    worker_pool._quiet_unraisable(other)
    assert printed == [other]


def test_an_interrupt_outside_the_task_comes_back_as_an_exception_prefect_takes():
    """Prefect's result thread in the parent takes only an Exception from a worker; an interrupt
    that lands while the worker reports its task's state would end that thread in a traceback."""
    from attnlab.flows.sweep import worker_pool

    def reporting() -> None:
        assert worker_pool._busy
        raise KeyboardInterrupt

    try:
        with pytest.raises(worker_pool.WorkerInterrupted):
            worker_pool._run_busy(reporting)
    except KeyboardInterrupt:  # caught here: one left to pytest would stop the whole run
        pytest.fail("the interrupt came out of the worker's call as it was")
    assert not worker_pool._busy and worker_pool._run_busy(lambda: 7) == 7


def test_a_second_ctrl_c_while_prefects_server_stops_kills_it_without_a_traceback():
    from attnlab.flows.services.prefect_server import Handle

    class Stopping:
        """A server process whose graceful stop a second Ctrl-C cuts into."""

        def __init__(self) -> None:
            self.calls: list[str] = []

        def poll(self) -> None:
            return None

        def terminate(self) -> None:
            self.calls.append("terminate")

        def kill(self) -> None:
            self.calls.append("kill")

        def wait(self, timeout: float | None = None) -> int:
            self.calls.append("wait")
            if timeout is not None:
                raise KeyboardInterrupt
            return -9

    handle = Handle.__new__(Handle)  # not started: its process is the stand-in
    handle.process = server = Stopping()  # type: ignore[assignment]
    try:
        handle.stop()
    except KeyboardInterrupt:  # caught here: one left to pytest would stop the whole run
        pytest.fail("the second Ctrl-C came out of Handle.stop, an atexit traceback at the command's exit")
    assert server.calls == ["terminate", "wait", "kill", "wait"] and handle.process is None
