"""What stopped a run in the middle of its work, told from its error and the state around it: a
full disk, Prefect's API server gone, the store's artifacts folder gone. Each becomes one line
saying what was lost, what became of the run and its last checkpoint, and what to do.

Pure: the caller measures the surroundings (free space, folders, whether Prefect answers) and
hands them in; nothing here touches a disk or a server.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field

#: A disk with less free space than this is full for a run (a checkpoint alone is larger).
LOW_SPACE_BYTES = 1 << 20
#: Error numbers of a write that found no space left.
_NO_SPACE = {errno.ENOSPC, errno.EDQUOT}
#: How SQLite and C++ libraries (torch's checkpoint writer) say it without an error number.
_NO_SPACE_TEXT = ("database or disk is full", "No space left on device", "Disk quota exceeded")


@dataclass(frozen=True)
class Surroundings:
    """What the caller found when the run stopped.

    ``free_bytes``: free space on the disk of each folder the run writes to (folder -> bytes);
    ``artifact_root``: the embedded store's artifacts folder (None for a tracking server) and
    whether it was lost during the run (deleted, or deleted and made anew by a later write);
    ``prefect_lost``: why Prefect's API server stopped answering, or None.
    """

    free_bytes: dict[str, int] = field(default_factory=dict)
    artifact_root: str | None = None
    artifact_root_lost: bool = False
    prefect_lost: str | None = None


@dataclass(frozen=True)
class Fault:
    """``lost``: what the run lost (``"the disk of /data is full"``); ``advice``: what to do."""

    kind: str
    lost: str
    advice: str


def causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception it was raised from or while handling, outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not known for known in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def out_of_space(exc: BaseException) -> bool:
    """True when ``exc`` or one of its causes is a write that found no space left."""
    for cause in causes(exc):
        if isinstance(cause, OSError) and cause.errno in _NO_SPACE:
            return True
        if any(text in str(cause) for text in _NO_SPACE_TEXT):
            return True
    return False


def diagnose(exc: BaseException, around: Surroundings) -> Fault | None:
    """The fault that stopped a run with ``exc``, or None when it is not one of these (a bug, a
    user's mistake, an interrupt: the caller reports those as before).

    Prefect's server gone wins (the run's own error is then a consequence of it); then a full
    disk (a folder of the run with less than :data:`LOW_SPACE_BYTES` free, or a write that said
    so); then the artifacts folder of the embedded store gone.
    """
    if around.prefect_lost:
        return Fault(
            "prefect",
            f"lost Prefect's API server ({around.prefect_lost})",
            "run the command again (it starts a new temporary server; with PREFECT_API_URL set, start that server first)",
        )
    full = [folder for folder, free in around.free_bytes.items() if free < LOW_SPACE_BYTES]
    if full or out_of_space(exc):
        where = full[0] if full else min(around.free_bytes, key=around.free_bytes.__getitem__, default=None)
        disk = f"the disk of {where}" if where else "a disk the run writes to"
        return Fault("disk", f"{disk} is full", "free some space there and run the command again")
    if around.artifact_root is not None and around.artifact_root_lost:
        return Fault(
            "artifacts",
            f"the MLflow store's artifacts folder {around.artifact_root} was deleted during the run",
            "restore it from a backup, or move mlflow.db aside to start a new store",
        )
    return None


def fault_line(fault: Fault, run_id: str, ended: bool, checkpoint: str | None) -> str:
    """The one line that ends a command whose run stopped on ``fault``: what was lost, the run's
    state (``ended``: it could be ended FAILED), where the last checkpoint is, what to do."""
    state = "ended FAILED" if ended else "stays RUNNING until the next 'attnlab train' against that store ends it FAILED"
    kept = f"the last checkpoint is kept at {checkpoint}" if checkpoint else "no checkpoint was written yet"
    return f"{fault.lost}; run {run_id} {state}; {kept}; the champion is unchanged; {fault.advice}"
