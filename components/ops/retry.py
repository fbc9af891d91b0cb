"""Bounded retries with exponential back-off: the schedule, and the loop that follows it.

A busy tracking server answers late; an absent one refuses at once. Callers retry the first for a
bounded time and report the second at once (the caller's ``transient`` predicate decides).
"""

from __future__ import annotations

import time
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")

#: How long a check keeps retrying a server that answers late, in all.
BUDGET_SECONDS = 30.0


def backoff(budget: float = BUDGET_SECONDS, first: float = 0.5, factor: float = 2.0, cap: float = 8.0) -> Iterator[float]:
    """The delays before each retry: ``first``, then ``factor`` times longer, at most ``cap``,
    until they would add up to more than ``budget`` (e.g. 0.5, 1, 2, 4, 8, 8 for 30 s)."""
    spent, delay = 0.0, first
    while spent + delay <= budget:
        yield delay
        spent += delay
        delay = min(delay * factor, cap)


def retrying(
    attempt: Callable[[], T],
    transient: Callable[[BaseException], bool],
    budget: float = BUDGET_SECONDS,
    on_retry: Callable[[BaseException, float], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``attempt()``'s value; a failure that ``transient`` accepts is retried after each delay of
    :func:`backoff` while ``budget`` seconds (attempts included) are not spent; the last failure,
    or any other, is raised. ``on_retry(error, delay)`` is told before each retry."""
    deadline = clock() + budget
    delays = backoff(budget)
    while True:
        try:
            return attempt()
        except Exception as exc:
            delay = next(delays, None)
            if not transient(exc) or delay is None or clock() + delay > deadline:
                raise
            if on_retry is not None:
                on_retry(exc, delay)
            sleep(delay)
