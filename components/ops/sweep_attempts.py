"""A sweep's attempts at each run: a run whose worker was lost is rerun by the cluster elsewhere,
which leaves two MLflow runs for one combination and seed, the first still RUNNING. At the end of
a sweep every run it started must be ended, and every rerun linked to the attempt it replaces.
A worker lost on this machine fails the one run it held, ended at once; a sweep that lost its
Prefect server stops, in one line.

Pure: the flow reads the child runs from MLflow and carries out the :class:`Settlement`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Tag of a rerun: the id of the attempt it replaces.
RERUN_OF = "attnlab.rerun_of"
#: Tag of every attempt of a combination run more than once: 1, 2, ...
ATTEMPT = "attnlab.attempt"


@dataclass(frozen=True)
class ChildRun:
    """One child run of a sweep: ``key`` names its combination and seed."""

    run_id: str
    key: tuple[object, ...]
    status: str
    start_time: int


@dataclass
class Settlement:
    """What to do: runs to end FAILED with the reason, tags to set per run."""

    end: dict[str, str] = field(default_factory=dict)
    tags: dict[str, dict[str, str]] = field(default_factory=dict)


def settle(children: list[ChildRun]) -> Settlement:
    """At the end of a sweep: every child still RUNNING lost its worker (its result, if any, came
    from a rerun) and is ended FAILED saying so; attempts of one key are numbered in start order
    and each rerun names the attempt before it."""
    plan = Settlement()
    by_key: dict[tuple[object, ...], list[ChildRun]] = {}
    for child in children:
        by_key.setdefault(child.key, []).append(child)
    for attempts in by_key.values():
        attempts.sort(key=lambda child: (child.start_time, child.run_id))
        for number, child in enumerate(attempts, start=1):
            later = attempts[number] if number < len(attempts) else None
            if len(attempts) > 1:
                plan.tags[child.run_id] = {ATTEMPT: str(number)}
                if number > 1:
                    plan.tags[child.run_id][RERUN_OF] = attempts[number - 2].run_id
            if child.status == "RUNNING":
                plan.end[child.run_id] = (
                    f"its worker was lost; rerun as {later.run_id}"
                    if later is not None
                    else "still RUNNING when the sweep ended: its worker was lost"
                )
    return plan


#: Why the run of a worker that died mid-sweep ended FAILED.
WORKER_LOST = "its worker process was lost (killed or crashed) while it trained"


def held_by_lost_worker(children: list[ChildRun], key: tuple[object, ...]) -> list[str]:
    """The runs a worker lost mid-sweep held: those of its combination and seed ``key`` still
    RUNNING (a sweep on local workers never runs one key twice at once). They are ended FAILED at
    once, saying :data:`WORKER_LOST`; the other workers' runs go on."""
    return [child.run_id for child in children if child.key == key and child.status == "RUNNING"]


def stopped_sweep_line(lost: str, parent_run_id: str, statuses: list[str], total: int) -> str:
    """The one line that ends a sweep stopped by ``lost`` (what it lost, e.g. "lost Prefect's API
    server (...)"): the sweep run's end, how its ``total`` runs ended (``statuses``: those of the
    runs it started, read from MLflow; the rest never started) and what to do."""
    counts = {status: statuses.count(status) for status in sorted(set(statuses))}
    ended = ", ".join(f"{count} {status}" for status, count in counts.items()) or "none started"
    unstarted = f", {total - len(statuses)} not started" if total > len(statuses) and statuses else ""
    return (
        f"{lost}; sweep run {parent_run_id} ended FAILED; of its {total} runs: {ended}{unstarted}; "
        "run the same sweep again with --resume to train only the runs not finished "
        "(it starts a new temporary server; with PREFECT_API_URL set, start that server first)"
    )
