"""Checks of the service commands' numeric options (``attnlab server``), made before anything
starts."""

from __future__ import annotations

import math


def timeout_problem(seconds: float, flag: str = "--timeout") -> str | None:
    """Why ``seconds`` is no wait limit (zero, negative, NaN or infinite), or None."""
    if math.isfinite(seconds) and seconds > 0:
        return None
    return f"{flag} {seconds}: give a positive number of seconds to wait for the servers, e.g. {flag} 180"
