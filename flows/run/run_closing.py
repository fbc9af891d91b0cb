"""How a train run's MLflow run ends when its steps stop: FINISHED, FAILED (an error), KILLED
(Ctrl-C or a termination signal, with the last checkpoint as an artifact; or a tuned trial
pruned, tagged ``attnlab.tune.state`` PRUNED), or left RUNNING with
one line naming the lost tracking server (the next train flow against that store ends it FAILED,
as it ends every run left RUNNING by a process that is gone); a fault of the surroundings (a full
disk, Prefect's server or the store's artifacts folder gone) is told in one line
(:mod:`attnlab.ops.faults`)."""

from __future__ import annotations

import logging
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from attnlab.flows.run import steps as tasks
from attnlab.flows.run.flow_runs import ending_status, is_interrupt
from attnlab.flows.services import prefect_watch
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking import store, tune_runs
from attnlab.flows.tracking.errors import RunFault, TrackingLost
from attnlab.ops.faults import Surroundings, diagnose, fault_line
from attnlab.tuning.trials import Pruned
from mlflow import MlflowClient

T = TypeVar("T")


def tracked_run(run_id: str, steps: Callable[[Path, tuple[int, int] | None], T]) -> T:
    """``steps(workdir, artifacts)``'s value, the MLflow run ``run_id`` then ended FINISHED; ended
    as its failure says otherwise (see the module docstring). ``workdir`` is a scratch folder
    removed at the end, ``artifacts`` the identity of the store's artifacts folder at the start;
    the checkpoint is removed too unless a lost server or a fault leaves it as the run's last."""
    workdir = Path(tempfile.mkdtemp(prefix="attnlab-run-"))
    checkpoint = tasks.checkpoint_path(run_id)
    artifacts = store.folder_identity(store.resolve_store().artifact_root)
    kept = False
    try:
        end_stale_runs()
        result = steps(workdir, artifacts)
        with no_sigint():
            tracking.end_run(MlflowClient(), run_id, "FINISHED")
        return result
    except BaseException as exc:
        told = closing_error(exc, run_id, workdir, checkpoint, artifacts)
        if told is None:
            raise
        kept = checkpoint.exists()
        raise told from exc
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if not kept:
            shutil.rmtree(checkpoint.parent, ignore_errors=True)


def closing_error(exc: BaseException, run_id: str, workdir: Path, checkpoint: Path, artifacts: tuple[int, int] | None) -> Exception | None:
    """End run ``run_id`` that ``exc`` stopped; the one-line error to raise in its place
    (TrackingLost, RunFault), or None to raise ``exc`` itself."""
    where = store.resolve_store()
    why = store.unreachable(where)  # one quick try: a lost server is not retried again
    if why is not None:
        return TrackingLost(lost_message(where.tracking_uri, why, run_id, checkpoint if checkpoint.exists() else None, is_interrupt(exc)))
    if isinstance(exc, Pruned):  # a tuned trial its study's pruner stopped: no failure
        with no_sigint():
            tune_runs.end_pruned(MlflowClient(), run_id, str(exc))
        return None
    fault = diagnose(exc, surroundings(where, workdir, checkpoint, artifacts))
    if fault is not None and not is_interrupt(exc):
        with no_sigint():
            ended = end_failed(run_id, fault.lost)
        return RunFault(fault_line(fault, run_id, ended, str(checkpoint) if checkpoint.exists() else None))
    with no_sigint():
        tracking.end_run(
            MlflowClient(),
            run_id,
            ending_status(exc),
            error=f"{type(exc).__name__}: {exc}",
            checkpoint=checkpoint if is_interrupt(exc) else None,
        )
    return None


@contextmanager
def no_sigint() -> Iterator[None]:
    """Ignore Ctrl-C while a run is being closed, so a second one cannot leave it RUNNING."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def end_stale_runs() -> None:
    """End FAILED the runs of this store left RUNNING by a process that is gone (one line each on
    the progress logger). Housekeeping: a failure here never stops the run."""
    try:
        ended = tracking.end_stale_runs(MlflowClient())
    except Exception:  # noqa: BLE001
        return
    for stale, why in ended:
        logging.getLogger("attnlab.progress").info(f"run {stale} was left RUNNING ({why}): ended it FAILED")


def surroundings(where: store.Store, workdir: Path, checkpoint: Path, artifacts: tuple[int, int] | None) -> Surroundings:
    """What :func:`attnlab.ops.faults.diagnose` needs to know of a run that stopped: the free space of
    the folders it writes to, whether the store's artifacts folder (``artifacts``: its identity
    when the run started) was deleted since, whether Prefect's server was lost."""
    folders = [workdir, checkpoint.parent, *([where.folder] if where.folder is not None else [])]
    free = {}
    for folder in folders:
        existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
        if existing is not None:
            free[str(folder)] = shutil.disk_usage(existing).free
    root = str(where.artifact_root) if where.embedded and artifacts is not None else None
    return Surroundings(free, root, store.artifact_root_lost(artifacts), prefect_watch.lost())


def end_failed(run_id: str, why: str) -> bool:
    """End run ``run_id`` FAILED with ``why``; False when even that cannot be written (a full
    disk): the next ``attnlab train`` ends it, as it ends a run whose process is gone."""
    try:
        tracking.end_run(MlflowClient(), run_id, "FAILED", error=why)
    except Exception:  # noqa: BLE001  the store shares the fault; the caller says the run stays RUNNING
        return False
    return True


def lost_message(uri: str, why: str, run_id: str, checkpoint: Path | None, interrupted: bool) -> str:
    """The one line that ends a run whose tracking server stopped answering."""
    kept = f"the last checkpoint is kept at {checkpoint}" if checkpoint else "no checkpoint was written yet"
    return (
        f"{'interrupted, and ' if interrupted else ''}lost the MLflow tracking server {uri} ({why}); "
        f"{kept}; run {run_id} stays RUNNING until the next 'attnlab train' against that server ends it FAILED"
    )
