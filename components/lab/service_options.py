"""Checks of the service commands' numeric options (``attnlab server``, ``attnlab ui``), made
before anything starts, and what they say while they wait for a server."""

from __future__ import annotations

import math


def timeout_problem(seconds: float, flag: str = "--timeout") -> str | None:
    """Why ``seconds`` is no wait limit (zero, negative, NaN or infinite), or None."""
    if math.isfinite(seconds) and seconds > 0:
        return None
    return f"{flag} {seconds}: give a positive number of seconds to wait for the servers, e.g. {flag} 180"


#: Seconds between progress lines while waiting for a server, when the output is not a terminal
#: (a terminal gets one line, rewritten every second).
PROGRESS_EVERY = 10.0


def progress_due(elapsed: float, last_shown: float | None, interactive: bool) -> bool:
    """Whether to show the waiting line again, ``elapsed`` seconds into the wait, last shown at
    ``last_shown`` (None: never): in a terminal at each new whole second, else every
    :data:`PROGRESS_EVERY` seconds; always at once the first time."""
    if last_shown is None:
        return True
    if interactive:
        return int(elapsed) > int(last_shown)
    return elapsed - last_shown >= PROGRESS_EVERY


def waiting_line(name: str, url: str, elapsed: float) -> str:
    """e.g. ``waiting for the MLflow UI at http://127.0.0.1:5000 (12 s)``."""
    return f"waiting for the {name} at {url} ({elapsed:.0f} s)"


def not_answering_line(name: str, url: str, timeout: float, log: str, flag: str = "--timeout") -> str:
    """The one line of a server that did not answer within its bound: which, the bound, where its
    log is and what to do."""
    return (
        f"the {name} at {url} did not answer within {timeout:g} s ({flag}); it was stopped. Its log: {log}. "
        f"Read its last lines, then run again with a longer wait, e.g. {flag} {max(2 * timeout, 180.0):g}"
    )
