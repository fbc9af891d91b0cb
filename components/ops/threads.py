"""How many threads a run may use: when several runs share a machine, and when other work keeps
its cores busy.

torch takes one thread per core. Its threads meet at the end of every operation, so one thread
that the kernel puts aside for another process holds up all of them; beside two busy loops on 2
cores the default run's epoch took 60x its quiet time. A run therefore takes the cores the
machine's other work leaves free (:func:`threads_for_load`, at least one), measured just before it
starts (:func:`busy_cores`), and its idle threads spin only briefly before they sleep
(:func:`wait_settings`, applied by :mod:`attnlab.flows` before torch loads): OpenMP's default spin
of about 3 ms took the cores from the threads with work once the machine got busy, and sleeping
at once made every wake-up late on a quiet machine (``benchmarks/bench_load.py``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Mapping
from pathlib import Path

#: How long the other processes' use of the cores is sampled.
SAMPLE_SECONDS = 0.25
#: How many times an idle OpenMP thread of torch's checks for work before it sleeps (GNU OpenMP's
#: ``GOMP_SPINCOUNT``; about 10 us here, against 300,000 by default). Long enough to bridge the
#: gaps between the operations of a training step, short enough that spinning threads do not
#: hold the cores of a machine that got busy.
SPIN_COUNT = 1000


def wait_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment variables that make torch's idle threads spin :data:`SPIN_COUNT` times
    before they sleep, to add to ``environ`` before torch loads; none when the user chose a wait
    policy or a spin count there (``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT``)."""
    if "OMP_WAIT_POLICY" in environ or "GOMP_SPINCOUNT" in environ:
        return {}
    return {"GOMP_SPINCOUNT": str(SPIN_COUNT)}


def usable_cpus() -> list[int]:
    """The cores this process may run on: its CPU affinity (``taskset``, a container's cpuset),
    else all of the machine's."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def usable_cores() -> int:
    """How many cores this process may run on (:func:`usable_cpus`); a run pinned to one core of
    two takes one thread, not two that take turns on it."""
    return len(usable_cpus())


def thread_share(concurrent_runs: int, cores: int | None = None) -> int:
    """Torch threads per run when ``concurrent_runs`` runs share ``cores`` (default: this
    machine's): an equal share, at least one. Five runs with all cores each on 2 cores took
    22-24 min apiece where one alone takes 38 s: oversubscribed threads spin against each other."""
    cores = cores if cores is not None else usable_cores()
    return max(1, cores // max(1, concurrent_runs))


def threads_for_load(cores: int, busy: float) -> int:
    """Torch threads for a run on ``cores`` cores of which ``busy`` are kept busy by other work:
    the cores left free, rounded, at least one and at most ``cores``."""
    return max(1, min(cores, round(cores - busy)))


def cpu_jiffies(stat: str, cpus: Collection[int] | None = None) -> tuple[int, int]:
    """(busy, total) clock ticks from ``/proc/stat``'s text: of all cores (its first line), or
    summed over the ``cpuN`` lines of the cores ``cpus``."""
    lines = stat.split("\n")
    if cpus is not None:
        wanted = {f"cpu{cpu}" for cpu in cpus}
        lines = [line for line in lines if line.split(" ", 1)[0] in wanted]
        if len(lines) != len(wanted):
            raise ValueError(f"/proc/stat has no line for some of the cores {sorted(cpus)}")
    busy = total = 0
    for line in lines if cpus is not None else lines[:1]:
        fields = [int(value) for value in line.split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        line_total = sum(fields[:8])  # guest time is counted in user time already
        busy, total = busy + line_total - idle, total + line_total
    return busy, total


def busy_cores(cores: int | None = None, seconds: float = SAMPLE_SECONDS, stat: Path = Path("/proc/stat")) -> float | None:
    """How many of the cores this process may use (``cores`` of them; default: all it may use)
    other processes keep busy, over ``seconds`` while this process waits; None where
    ``/proc/stat`` cannot be read (not Linux). Pinned to some of the machine's cores, only those
    are measured."""
    cpus = usable_cpus()
    pinned = cpus if len(cpus) < (os.cpu_count() or 1) else None
    cores = cores if cores is not None else len(cpus)
    try:
        before = cpu_jiffies(stat.read_text(), pinned)
        time.sleep(seconds)
        after = cpu_jiffies(stat.read_text(), pinned)
    except (OSError, ValueError, IndexError):
        return None
    busy, total = after[0] - before[0], after[1] - before[1]
    return cores * busy / total if total > 0 else 0.0


def machine_load(cores: int | None = None) -> tuple[float, str]:
    """(cores kept busy by other work now, that in words); 0.0 where it cannot be measured."""
    cores = cores if cores is not None else usable_cores()
    busy = busy_cores(cores)
    if busy is None:
        return 0.0, f"all {cores} cores (the load cannot be measured here)"
    return busy, f"{busy:.1f} of {cores} cores busy with other work"


def chosen_threads(cores: int | None = None) -> tuple[int, str]:
    """(torch threads for a run starting now, why: the measured load in words)."""
    cores = cores if cores is not None else usable_cores()
    busy, why = machine_load(cores)
    return threads_for_load(cores, busy), why


def thread_params(torch_threads: int) -> dict[str, str]:
    """How this process computes, as a run's params: torch's threads (``torch_threads``, what
    ``torch.get_num_threads()`` says), OpenMP's wait policy and spin count (:func:`wait_settings`
    unless the user chose them)."""
    default = "(OpenMP's default)"
    return {
        "torch_threads": str(torch_threads),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", default),
        "gomp_spincount": os.environ.get("GOMP_SPINCOUNT", default),
    }
