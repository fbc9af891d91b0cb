"""Bounded retries with exponential back-off: the schedule, and the loop that follows it.

A busy tracking server answers late; an absent one refuses at once. Callers retry the first for a
bounded time and report the second at once. :func:`classify` tells which a failure is; the
predicates :func:`answers_late` and :func:`transient` are the two questions callers ask of it.
"""

from __future__ import annotations

import enum
import re
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from attnlab.lab.errors import UserError
from attnlab.ops.faults import out_of_space

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


class Failure(enum.Enum):
    """What a failure says about the store or server that raised it."""

    #: The user's mistake, or a refusal already reported in one line: retrying changes nothing.
    MISTAKE = "mistake"
    #: A full disk stays full for the seconds a retry waits.
    FULL_DISK = "full disk"
    #: The store is there but busy: a timeout, a 5xx, a locked SQLite file.
    LATE = "late"
    #: The tracking server answered with an error code that asks to try again.
    BUSY = "busy"
    #: The tracking server refused on purpose (a bad parameter, a missing run).
    REFUSED = "refused"
    #: I/O or the network failed without saying more (connection refused or reset, a lost file).
    NETWORK = "network"
    #: Anything else: a bug.
    OTHER = "other"


#: Text of a failure from a store that answers late (retried) rather than not at all.
LATE_SIGNS = ("timed out", "Read timed out", "database is locked", "too many 5", "TEMPORARILY_UNAVAILABLE",
              "Connection reset", "RemoteDisconnected")  # fmt: skip
#: HTTP statuses of a busy server, as whole numbers: not digits of a port or an address
#: (``http://127.0.0.1:50329`` holds "503" but is no answer at all).
LATE_STATUSES = re.compile(r"(?<![\d.:])(?:429|502|503|504)(?!\d)")
#: MLflow error codes that ask to try again.
BUSY_CODES = frozenset({"INTERNAL_ERROR", "TEMPORARILY_UNAVAILABLE", "REQUEST_LIMIT_EXCEEDED", "ABORTED"})
#: Libraries whose every error is the network's or the database connection's.
NETWORK_LIBRARIES = frozenset({"requests", "urllib3", "sqlalchemy", "httpx"})


def classify(exc: BaseException) -> Failure:
    """Which :class:`Failure` ``exc`` is, told from its type, its MLflow error code (an
    ``error_code`` string attribute) and its text, in that order of :class:`Failure`'s members."""
    if isinstance(exc, UserError):
        return Failure.MISTAKE
    if out_of_space(exc):
        return Failure.FULL_DISK
    text = f"{type(exc).__name__}: {exc}"
    if any(sign in text for sign in LATE_SIGNS) or LATE_STATUSES.search(text):
        return Failure.LATE
    code = getattr(exc, "error_code", None)
    if isinstance(code, str):
        return Failure.BUSY if code in BUSY_CODES else Failure.REFUSED
    if isinstance(exc, (OSError, ConnectionError, TimeoutError)) or type(exc).__module__.split(".")[0] in NETWORK_LIBRARIES:
        return Failure.NETWORK
    return Failure.OTHER


def answers_late(exc: BaseException) -> bool:
    """True for failures of a store that is there but busy: asked again with back-off; False for
    one that is absent (connection refused, unknown host) or refused on purpose: told at once."""
    return classify(exc) is Failure.LATE


def transient(exc: BaseException | None) -> bool:
    """True for failures a step retries a few seconds later (I/O and tracking-server hiccups);
    False for mistakes, a full disk, deliberate refusals and bugs (and for no failure at all)."""
    return exc is not None and classify(exc) in (Failure.LATE, Failure.BUSY, Failure.NETWORK)
