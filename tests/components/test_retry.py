"""Bounded retries: the back-off schedule and which failures are retried for how long."""

from __future__ import annotations

import errno

import pytest

from attnlab.lab.errors import UserError
from attnlab.ops.retry import Failure, answers_late, backoff, classify, retrying, transient


class FakeTime:
    """A clock that only moves when slept on, or when an attempt takes time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def test_backoff_doubles_up_to_the_cap_within_the_budget():
    assert list(backoff(30)) == [0.5, 1, 2, 4, 8, 8]
    assert sum(backoff(30)) <= 30
    assert list(backoff(0.4)) == []


def test_a_transient_failure_is_retried_until_it_succeeds():
    time, calls = FakeTime(), []

    def attempt():
        calls.append(time.now)
        if len(calls) < 3:
            raise TimeoutError("no answer in time")
        return "answered"

    retried = []
    result = retrying(attempt, lambda exc: isinstance(exc, TimeoutError), on_retry=lambda exc, d: retried.append(d),
                      sleep=time.sleep, clock=time.clock)  # fmt: skip
    assert result == "answered" and len(calls) == 3 and retried == [0.5, 1]


def test_a_failure_that_is_not_transient_is_raised_at_once():
    time, calls = FakeTime(), []

    def attempt():
        calls.append(1)
        raise ConnectionRefusedError("connection refused")

    with pytest.raises(ConnectionRefusedError):
        retrying(attempt, lambda exc: isinstance(exc, TimeoutError), sleep=time.sleep, clock=time.clock)
    assert calls == [1] and time.slept == []


def test_retries_stop_when_the_budget_is_spent_counting_slow_attempts():
    time = FakeTime()

    def attempt():
        time.now += 5  # each attempt waits 5 s for an answer that never comes
        raise TimeoutError("no answer in time")

    with pytest.raises(TimeoutError):
        retrying(attempt, lambda exc: True, budget=30, sleep=time.sleep, clock=time.clock)
    assert time.now <= 30 + 5  # the last attempt may start before the deadline and run past it
    assert time.slept == [0.5, 1, 2, 4]


class CodedError(Exception):
    """An error carrying a tracking server's error code, as MLflow's do."""

    def __init__(self, message: str, error_code: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class TrackingDown(UserError):
    """A store reported unreachable in one line already."""


@pytest.mark.parametrize(
    "exc, failure",
    [
        (UserError("--epochs 0: give at least 1"), Failure.MISTAKE),
        (TrackingDown("cannot reach the MLflow tracking store: timed out"), Failure.MISTAKE),  # told, not asked again
        (OSError(errno.ENOSPC, "No space left on device"), Failure.FULL_DISK),
        (RuntimeError("sqlite3.OperationalError: database or disk is full"), Failure.FULL_DISK),
        (TimeoutError("Read timed out. (read timeout=3)"), Failure.LATE),
        (RuntimeError("sqlite3.OperationalError: database is locked"), Failure.LATE),
        (RuntimeError("Max retries exceeded (Caused by ResponseError('too many 503 error responses'))"), Failure.LATE),
        (CodedError("db locked", "INTERNAL_ERROR"), Failure.BUSY),
        (CodedError("slow down", "REQUEST_LIMIT_EXCEEDED"), Failure.BUSY),
        (CodedError("bad value", "INVALID_PARAMETER_VALUE"), Failure.REFUSED),
        (CodedError("no such run", "RESOURCE_DOES_NOT_EXIST"), Failure.REFUSED),
        (ConnectionRefusedError(111, "Connection refused"), Failure.NETWORK),
        (OSError("disk"), Failure.NETWORK),
        (KeyError("bug"), Failure.OTHER),
    ],
)
def test_each_failure_is_classified(exc, failure):
    assert classify(exc) is failure


def test_a_store_that_answers_late_is_asked_again_and_an_absent_one_is_not():
    assert answers_late(TimeoutError("timed out")) and answers_late(CodedError("HTTP 503", "TEMPORARILY_UNAVAILABLE"))
    assert not answers_late(ConnectionRefusedError(111, "Connection refused"))
    assert not answers_late(CodedError("db locked", "INTERNAL_ERROR"))  # a damaged store says so at once
    assert not answers_late(TrackingDown("timed out"))


def test_a_step_retries_hiccups_but_not_mistakes_full_disks_refusals_or_bugs():
    retried = [TimeoutError("timed out"), CodedError("db locked", "INTERNAL_ERROR"), ConnectionResetError(104, "reset")]
    kept = [UserError("bad"), OSError(errno.ENOSPC, "full"), CodedError("bad", "INVALID_PARAMETER_VALUE"), KeyError("bug"), None]
    assert [transient(exc) for exc in retried] == [True] * 3
    assert [transient(exc) for exc in kept] == [False] * 5


def test_runs_sharing_a_machine_get_an_equal_share_of_its_cores():
    from attnlab.ops.threads import thread_share

    assert thread_share(1, cores=8) == 8
    assert thread_share(3, cores=8) == 2
    assert thread_share(5, cores=2) == 1


@pytest.mark.parametrize("port", [50329, 50277, 5042, 4290])
def test_a_refused_connection_is_not_late_whatever_digits_its_port_holds(port):
    # The port of an absent server once read as a busy server's "503" / "502": retried for 24 s.
    exc = ConnectionError(f"HTTPConnectionPool(host='127.0.0.1', port={port}): Max retries exceeded with url: "
                          f"http://127.0.0.1:{port}/api/2.0/mlflow/experiments/search (Caused by NewConnectionError: "
                          "[Errno 111] Connection refused)")  # fmt: skip
    assert classify(exc) is Failure.NETWORK


@pytest.mark.parametrize(
    "text", ["503 Server Error: Service Unavailable for url: http://host/api", "HTTP 429 Too Many Requests", "status 502"]
)
def test_a_busy_servers_status_is_late(text):
    assert classify(RuntimeError(text)) is Failure.LATE
