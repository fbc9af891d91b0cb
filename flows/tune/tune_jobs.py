"""How ``attnlab tune`` carries out its trials: Optuna's ask-and-tell interface over the sweep's
task runners. The study is asked for a trial's values while fewer than ``max_parallel`` train
and the budget (trials, time) allows; each trial trains on a worker (a process, a thread or a
Dask worker) and reports its epochs to the study itself (:func:`attnlab.flows.tune.tune_study.reporter`);
its outcome is told to the study as it comes: COMPLETE with its value, PRUNED, or FAIL with what
ended it (user attribute ``attnlab.outcome``).
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import optuna
from prefect.futures import PrefectFuture

from attnlab.flows.sweep.worker_pool import lost_worker
from attnlab.flows.tracking import tune_runs
from attnlab.flows.tune import tune_study
from attnlab.lab.config import ExperimentConfig
from attnlab.tuning.space import Space, apply_values
from attnlab.tuning.trials import BASELINE_ATTR, INTERRUPTED, Pruned, trial_value, trials_left
from mlflow import MlflowClient

#: One line per finished trial goes to this logger.
progress = logging.getLogger("attnlab.tune")
#: Seconds between two looks at the trials' outcomes.
TICK = 1.0
#: Set when the tune stops (Ctrl-C): trials training in this process's threads stop at their
#: next epoch (worker processes get the terminal's signal themselves).
STOP = threading.Event()

#: Submits one trial (its Optuna trial, its config) to the task runner; its future.
Submit = Callable[[optuna.trial.Trial, ExperimentConfig], PrefectFuture[dict[str, Any]]]


def run_trials(study: optuna.Study, space: Space, base: ExperimentConfig, total: int, timeout: float | None, max_parallel: int, submit: Submit,
               parent_run_id: str) -> int:  # fmt: skip
    """Train trials until the study holds ``total`` counted trials or ``timeout`` seconds have
    passed (trials under way then finish); the number of trials started."""
    started, begun = time.monotonic(), 0
    distributions = tune_study.distributions(space)
    finished: queue.SimpleQueue[PrefectFuture[dict[str, Any]]] = queue.SimpleQueue()  # its put takes no lock an interrupt can leave held
    running: dict[PrefectFuture[dict[str, Any]], optuna.trial.Trial] = {}
    left = trials_left(total, tune_study.records(study))
    while True:
        while left > 0 and len(running) < max_parallel and (timeout is None or time.monotonic() - started < timeout):
            trial = study.ask(distributions)
            future = submit(trial, apply_values(base, trial.params))
            running[future] = trial
            future.add_done_callback(finished.put)
            left, begun = left - 1, begun + 1
        if not running:
            return begun
        try:
            done = finished.get(timeout=TICK)
        except queue.Empty:
            continue
        trial = running.pop(done)
        if not tell(study, trial, done, space.objective, parent_run_id):
            left += 1  # a lost worker's trial does not count: another one takes its place
        left = min(left, trials_left(total, tune_study.records(study), len(running)))


def tell(study: optuna.Study, trial: optuna.trial.Trial, future: PrefectFuture[dict[str, Any]], objective: str, parent_run_id: str) -> bool:
    """Tell the study how ``trial`` (its ``future``) ended, and log a line; False when it does
    not count (its worker was lost)."""
    number = trial.number
    name = f"trial {number}" + (" (baseline)" if trial.user_attrs.get(BASELINE_ATTR) else "")
    try:
        summary = future.result()
    except Pruned as exc:
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        progress.info("%s: PRUNED (%s)", name, exc)
        return True
    except Exception as exc:  # noqa: BLE001  one trial's failure is told, the study goes on
        lost = lost_worker(exc)
        why = INTERRUPTED if lost else " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        trial.set_user_attr(tune_study.OUTCOME_ATTR, why)
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
        tune_runs.end_running_trials(MlflowClient(), parent_run_id, "FAILED", why, {number})  # a dead worker's run
        progress.info("%s: FAILED: %s", name, "its worker was lost; another trial takes its place" if lost else why)
        return not lost
    value = trial_value(objective, summary["selection"])
    if not math.isfinite(value):
        trial.set_user_attr(tune_study.OUTCOME_ATTR, f"{objective} is {value}")
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
    else:
        study.tell(trial, value)
    shown = ", ".join(f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}" for key, value in trial.params.items())
    progress.info("%s: %s %.4f (%s), run %s", name, objective, value, shown, summary["run_id"])
    return True
