"""The tune flow: an Optuna study of one arm's config, each trial one train flow run (a child of
the study's MLflow parent run) on the sweep's task runners, pruned on its validation curve; the
parent ends up holding the trials table, Optuna's history and importance plots and the best
config (``best/config.yaml``, which ``attnlab train --config`` and ``attnlab sweep --config`` take).

With ``baseline: true`` in the space, the first trial trains the base config's own values.
The study is stored with the lab's store (:mod:`attnlab.flows.tune.tune_study`): the same command run
again resumes it, its parent run reopened, and trains only the trials the budget still lacks.
A stopped tune (Ctrl-C, SIGTERM) ends its trials' runs KILLED, their Optuna trials FAIL as
interrupted (they do not count), and its parent run KILLED.
"""

from __future__ import annotations

from typing import Any

import optuna
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture

from attnlab.flows.run import epoch_hooks
from attnlab.flows.run.flow_runs import ending_status, flow_run_tags, interrupt_alone, is_interrupt
from attnlab.flows.run.run_closing import no_sigint
from attnlab.flows.services import prefect_watch
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking import store, tune_runs
from attnlab.flows.tune import tune_jobs, tune_results, tune_study
from attnlab.lab.config import ExperimentConfig
from attnlab.tuning.space import baseline_values, parse_space
from attnlab.tuning.trials import BASELINE_ATTR, needs_baseline
from mlflow import MlflowClient


@task(name="train-trial", cache_policy=NO_CACHE)
def train_trial(
    config: ExperimentConfig, experiment: str, parent_run_id: str, threads: int | None, link: tune_study.TrialLink
) -> dict[str, Any]:
    """Train one trial (the train flow, as a subflow, its run tagged with the study and the
    trial's number), reporting each epoch to the study; the run's id, kept weights' validation
    scores (``selection``) and test metrics. Raises :class:`~attnlab.tuning.trials.Pruned` when
    the pruner stopped it."""
    from attnlab.flows.run.train_flow import train_flow  # see sweep_flow.train_combination

    if threads:
        import torch

        torch.set_num_threads(threads)
    report = tune_study.reporter(link)

    def listen(run_id: str, metrics: dict[str, float]) -> None:
        if tune_jobs.STOP.is_set():  # the tune stops: a trial in this process's threads ends KILLED
            raise KeyboardInterrupt
        report(run_id, metrics)

    tags = {tune_runs.STUDY_TAG: link.study, tune_runs.TRIAL_TAG: str(link.number)}
    child = train_flow.with_options(flow_run_name=f"trial-{link.number}")
    with prefect_watch.watching(), epoch_hooks.listening(listen):
        summary = interrupt_alone(lambda: child(config=config, experiment=experiment, register_model=False, parent_run_id=parent_run_id,
                                                command="tune", log_model=False, run_tags=tags))  # fmt: skip
    return {key: summary[key] for key in ("run_id", "selection", "metrics")}


@flow(name="attnlab-tune", description="Tune one arm's config with Optuna; each trial a train run under one MLflow parent run.")
def tune_flow(
    base: ExperimentConfig,
    space: dict[str, Any],
    trials: int,
    study_name: str,
    storage_url: str,
    experiment: str,
    timeout: float | None = None,
    max_parallel: int = 1,
    threads: int | None = None,
) -> dict[str, Any]:
    """Run the study ``study_name`` (at ``storage_url``) of ``base`` over the search ``space``
    (a space file's mapping, :mod:`attnlab.tuning.space`) until it holds ``trials`` counted
    trials or ``timeout`` seconds passed, ``max_parallel`` at once; its summary (JSON-ready)."""
    searched = parse_space(space)
    study = tune_study.open_study(storage_url, study_name, searched, base.epochs)
    store.check_store(store.use_store())
    client = MlflowClient()
    parent_run_id = tune_runs.parent_run(
        client, experiment, study_name, base, searched, study.user_attrs.get(tune_study.PARENT_ATTR), flow_run_tags()
    )
    study.set_user_attr(tune_study.PARENT_ATTR, parent_run_id)
    stale = tune_study.end_interrupted(study)  # left RUNNING by a tune that was stopped
    if stale:
        tune_runs.end_running_trials(client, parent_run_id, "KILLED", "the tune that ran this trial was stopped", set(stale))
    if searched.baseline and needs_baseline(tune_study.records(study), trials):
        study.enqueue_trial(baseline_values(searched, base), user_attrs={BASELINE_ATTR: True})  # the next trial asked for
    tune_jobs.STOP.clear()

    def submit(trial: optuna.trial.Trial, config: ExperimentConfig) -> PrefectFuture[dict[str, Any]]:
        link = tune_study.TrialLink(
            storage_url, study_name, trial._trial_id, trial.number, searched.objective, searched.pruner, base.epochs
        )
        return train_trial.with_options(task_run_name=f"trial-{trial.number}").submit(config, experiment, parent_run_id, threads, link)

    held = len(study.get_trials(deepcopy=False))  # trials of earlier runs of this study
    try:
        started = tune_jobs.run_trials(study, searched, base, trials, timeout, max_parallel, submit, parent_run_id)
        summary = tune_results.finish(client, study, searched, base, parent_run_id)
    except BaseException as exc:
        _abandon(client, study, parent_run_id, exc)
        raise
    tracking.end_run(client, parent_run_id, "FINISHED")
    return {"parent_run_id": parent_run_id, "experiment": experiment, "study": study_name, "storage": tune_study.shown_url(storage_url),
            "tracking_uri": store.resolve_store().tracking_uri, "started": started, "resumed": held > 0, **summary}  # fmt: skip


def _abandon(client: MlflowClient, study: optuna.Study, parent_run_id: str, exc: BaseException) -> None:
    """End a tune that ``exc`` stopped: its workers stopped (an interrupt), its trials' runs
    KILLED and Optuna trials FAIL as interrupted, its parent run KILLED or FAILED. A second Ctrl-C
    meanwhile is ignored: it would leave runs RUNNING and workers behind."""
    from attnlab.flows.sweep.worker_pool import stop_workers

    with no_sigint():
        tune_jobs.STOP.set()
        if is_interrupt(exc):
            stop_workers()
        tune_study.end_interrupted(study)
        tune_runs.end_running_trials(client, parent_run_id, "KILLED", f"the tune stopped: {type(exc).__name__}")
        tracking.end_run(client, parent_run_id, ending_status(exc), error=f"{type(exc).__name__}: {exc}")
