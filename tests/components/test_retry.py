"""Bounded retries: the back-off schedule and which failures are retried for how long."""

from __future__ import annotations

import pytest

from attnlab.ops.retry import backoff, retrying


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


def test_runs_sharing_a_machine_get_an_equal_share_of_its_cores():
    from attnlab.training.threads import thread_share

    assert thread_share(1, cores=8) == 8
    assert thread_share(3, cores=8) == 2
    assert thread_share(5, cores=2) == 1
