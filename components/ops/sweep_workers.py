"""How many runs of a sweep train at once, and how many torch threads each takes."""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.ops.threads import thread_share, threads_for_load, usable_cores


@dataclass(frozen=True)
class Workers:
    """``parallel``: runs at once; ``threads``: torch threads per run (None: torch's default, for
    a remote cluster that sizes its own workers)."""

    parallel: int
    threads: int | None


def sweep_workers(runs: int, max_parallel: int | None, remote: bool, cores: int | None = None, busy: float = 0.0) -> Workers:
    """The workers of a sweep of ``runs`` runs. ``max_parallel`` (the user's, when given) wins;
    else an existing (``remote``) cluster is handed every run at once, and this machine runs one
    per core (``cores``; default: those this process may use), never more than there are runs. Local runs share
    equally the cores that the machine's other work leaves free (``busy`` of them kept busy,
    measured before the sweep starts: :func:`attnlab.ops.threads.threads_for_load`), at least one
    thread each (:func:`attnlab.ops.threads.thread_share`)."""
    cores = cores if cores is not None else usable_cores()
    parallel = max_parallel or (runs if remote else min(runs, cores))
    return Workers(parallel, None if remote else thread_share(min(parallel, runs), threads_for_load(cores, busy)))
