"""How many threads a run may use when several share a machine."""

from __future__ import annotations

import os


def thread_share(concurrent_runs: int, cores: int | None = None) -> int:
    """Torch threads per run when ``concurrent_runs`` runs share ``cores`` (default: this
    machine's): an equal share, at least one. Five runs with all cores each on 2 cores took
    22-24 min apiece where one alone takes 38 s: oversubscribed threads spin against each other."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    return max(1, cores // max(1, concurrent_runs))
