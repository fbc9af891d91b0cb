"""Whether a stopped training run can be resumed from its checkpoint: ``attnlab train --resume``.

A run cut short (Ctrl-C, a termination signal, a job killed on a shared machine, a lost server)
keeps its last per-epoch checkpoint: on local disk when its process could not end it, as the
run's ``checkpoint/`` artifact when it ended KILLED or FAILED. Resuming continues the same MLflow
run after its last finished epoch, with the config it started with.

One resume of a run at a time: the command holds a lock per run while it resumes it, and a
second resume is refused naming the process that holds it (:func:`busy_refusal`).

Pure: the command reads the run and where its checkpoint is, and says the refusal in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from attnlab.ops.stale_runs import HEARTBEAT, HOST, PID


@dataclass(frozen=True)
class StoppedRun:
    """What the refusal depends on: the run's id and status, why a RUNNING run is stale (None
    while its owner may still be at work), and where a checkpoint of it is."""

    run_id: str
    status: str
    stale_reason: str | None
    local_checkpoint: bool
    artifact_checkpoint: bool


def resume_refusal(run: StoppedRun) -> str | None:
    """Why ``run`` cannot be resumed, or None when it can (a checkpoint on local disk is taken
    before the artifact: it is never older)."""
    if run.status == "FINISHED":
        return f"run {run.run_id} is FINISHED: nothing to resume (train a new run to train longer)"
    if run.status == "RUNNING" and run.stale_reason is None:
        return f"run {run.run_id} is still RUNNING in a process that may be at work; stop it first (Ctrl-C), or wait"
    if run.status not in ("RUNNING", "KILLED", "FAILED"):
        return f"run {run.run_id} is {run.status}: only a KILLED, FAILED or abandoned RUNNING run can be resumed"
    if not (run.local_checkpoint or run.artifact_checkpoint):
        return f"run {run.run_id} kept no checkpoint (it stopped before its first epoch ended): train it again instead"
    return None


def busy_refusal(run_id: str, holder: Mapping[str, str], now: float) -> str:
    """The line refusing a second resume of run ``run_id`` while another process holds its resume
    lock; ``holder``: that process's owner tags (:func:`attnlab.ops.stale_runs.owner_tags`),
    empty when it has not written them yet."""
    who = f"process {holder[PID]} on {holder[HOST]}" if PID in holder and HOST in holder else "another process"
    try:
        since = f" (started {max(0.0, now - float(holder[HEARTBEAT])):.0f} s ago)"
    except (KeyError, ValueError):
        since = ""
    return (
        f"run {run_id} is being resumed by {who}{since}; two resumes would train the same epochs twice: "
        "wait for that one to end, or stop it (Ctrl-C there) and resume again"
    )


def damaged_checkpoint(run_id: str, problem: str) -> str:
    """The line refusing to resume run ``run_id`` whose checkpoint cannot be loaded (``problem``:
    why, naming the file), with the choices left."""
    return (
        f"run {run_id} cannot be resumed: its checkpoint is damaged ({problem}); "
        "start a new run instead ('attnlab train' with the same options), or resume another run ('attnlab runs' lists them)"
    )
