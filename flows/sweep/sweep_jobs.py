"""How the sweep flow carries out its runs on a task runner: at most ``max_parallel`` at once, each
outcome reported as it comes and the runs in progress every 30 s.

Faults: a worker process that dies (SIGKILL, the out-of-memory killer) fails the one run it held,
whose MLflow run is ended FAILED at once; the other runs go on, and the runs not yet started start
on the workers left (:mod:`attnlab.flows.sweep.worker_pool`). When Prefect's server is lost
(:mod:`attnlab.flows.services.prefect_watch`) no run starts any more; the runs in progress, which
watch the server too, end themselves FAILED within seconds, and :class:`~attnlab.flows.services.prefect_watch.PrefectLost`
is raised once they have (or :data:`GRACE` seconds have passed) for the flow to stop the sweep.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable
from typing import Any

from prefect.futures import PrefectFuture

from attnlab.flows.services import prefect_watch
from attnlab.flows.sweep.worker_pool import lost_worker
from attnlab.flows.tracking.sweep_reruns import child_runs, end_lost_worker_run
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.run_records import EPOCH_TAG
from attnlab.lab.summaries import finish_line
from attnlab.ops.sweep_attempts import WORKER_LOST
from mlflow import MlflowClient

#: One line per finished combination goes to this logger.
progress = logging.getLogger("attnlab.sweep")
#: Seconds between two looks at Prefect's server and the runs' outcomes.
TICK = 1.0
#: Seconds the runs in progress get to end themselves once Prefect's server is lost.
GRACE = 10.0

#: (label, config, resume key) of one run to train.
Job = tuple[str, ExperimentConfig, str | None]
#: Submits one job to the task runner; its future.
Submit = Callable[[str, ExperimentConfig, str | None], PrefectFuture[dict[str, Any]]]


def run_all(submit: Submit, jobs: list[Job], max_parallel: int, parent_run_id: str, report_every: float = 30.0) -> list[dict[str, Any]]:
    """Submit ``jobs``, at most ``max_parallel`` at once; their outcomes
    (``{label, seed, task, status, summary | error}``) in job order. PrefectLost when Prefect's
    server was lost meanwhile (see the module docstring)."""
    client = MlflowClient()
    pending = list(enumerate(jobs))
    finished: queue.SimpleQueue[PrefectFuture[dict[str, Any]]] = queue.SimpleQueue()  # its put takes no lock an interrupt can leave held
    running: dict[PrefectFuture[dict[str, Any]], tuple[int, str, ExperimentConfig]] = {}
    outcomes: dict[int, dict[str, Any]] = {}
    report_at, lost_at = time.monotonic() + report_every, None
    while pending or running:
        why = prefect_watch.lost()
        if why is not None:
            lost_at = lost_at or time.monotonic()
            if not running or time.monotonic() - lost_at > GRACE:
                raise prefect_watch.PrefectLost(f"lost Prefect's API server ({why})")
        while why is None and pending and len(running) < max_parallel:
            index, (label, config, key) = pending.pop(0)
            future = submit(label, config, key)
            running[future] = (index, label, config)
            future.add_done_callback(finished.put)
        try:
            done = finished.get(timeout=TICK)
        except queue.Empty:
            if lost_at is None and time.monotonic() >= report_at:
                report_at = time.monotonic() + report_every
                line = _running_line(client, parent_run_id)
                if line:
                    progress.info(line)
            continue
        index, label, config = running.pop(done)
        outcomes[index] = _outcome(client, parent_run_id, done, label, config)
        if lost_at is None:  # after a loss, the line that stops the sweep tells how each run ended
            progress.info(finish_line(len(outcomes), len(jobs), outcomes[index]))
    return [outcomes[i] for i in range(len(jobs))]


def _outcome(
    client: MlflowClient, parent_run_id: str, future: PrefectFuture[dict[str, Any]], label: str, config: ExperimentConfig
) -> dict[str, Any]:
    """A finished future as ``{label, seed, task, status, summary | error}``; the run of a worker
    that died is ended FAILED here."""
    base = {"label": label, "seed": config.seed, "task": config.task}
    try:
        return {**base, "status": "FINISHED", "summary": future.result()}
    except Exception as exc:  # noqa: BLE001  any failure of one combination is reported, not raised
        if lost_worker(exc):
            key = (config.task, config.scorer, config.encoder, config.decoder, str(config.seed))
            ended = end_lost_worker_run(client, parent_run_id, key)
            return {**base, "status": "FAILED", "error": WORKER_LOST + (f"; run {', '.join(ended)} ended FAILED" if ended else "")}
        error = " ".join(f"{type(exc).__name__}: {exc}".split())
        return {**base, "status": "FAILED", "error": error[:500]}


def _running_line(client: MlflowClient, parent_run_id: str) -> str | None:
    """Where the runs in progress are, read from their MLflow runs (works for any runner): one
    search per call, whatever the number of running runs (the latest epoch is a tag, the latest
    validation score the run's metric value)."""
    parts = []
    for run in child_runs(client, parent_run_id, "RUNNING"):
        epochs = run.data.params.get("epochs", "?")
        epoch, score = run.data.tags.get(EPOCH_TAG), run.data.metrics.get("val_exact_match")
        where = f"epoch {epoch}/{epochs} val_exact_match {score:.3f}" if epoch and score is not None else "starting"
        parts.append(f"{run.data.tags.get('mlflow.runName', run.info.run_id)}: {where}")
    return "running: " + "; ".join(sorted(parts)) if parts else None
