"""Wall time per named step."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Stopwatch:
    """Adds the seconds spent in each ``with watch("name"):`` block to ``watch.seconds[name]``.

    >>> watch = Stopwatch()
    >>> with watch("train"):
    ...     pass
    >>> list(watch.seconds)
    ['train']
    """

    def __init__(self, **seconds: float) -> None:
        self.seconds: dict[str, float] = dict(seconds)

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started

    def rounded(self, digits: int = 3) -> dict[str, float]:
        """The seconds per step, rounded."""
        return {name: round(value, digits) for name, value in self.seconds.items()}
