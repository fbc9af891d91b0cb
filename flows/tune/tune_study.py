"""``attnlab tune``'s Optuna study: where it is stored, how it is opened and resumed, its search
space as Optuna distributions, its trials as plain records, and the reporter that lets a trial's
training tell the study each epoch's validation score (and stop when the pruner says so).

The study lives with the lab's store: ``sqlite:///<store folder>/optuna.db`` beside the embedded
MLflow store's ``mlflow.db``, or the RDB URL given (``--storage``) for a tracking server set-up.
The decisions (space, budget, best trial) are :mod:`attnlab.tuning`'s; this module adapts them.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import optuna

from attnlab.flows.run.epoch_hooks import EpochListener
from attnlab.flows.tracking.errors import UserError
from attnlab.flows.tracking.store import Store
from attnlab.tuning.space import Choice, Space
from attnlab.tuning.trials import INTERRUPTED, Pruned, TrialRecord, direction, sampler_seed

#: The study file of the embedded store, beside mlflow.db.
STUDY_FILE = "optuna.db"
#: The study's user attribute that keeps its MLflow parent run.
PARENT_ATTR = "attnlab.parent_run_id"
#: The trial user attribute that says how a trial that did not complete ended.
OUTCOME_ATTR = "attnlab.outcome"

optuna.logging.set_verbosity(optuna.logging.ERROR)  # the tune's own lines say what happened
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def storage_url(store: Store, given: str | None) -> str:
    """The study's storage: ``given``, else the SQLite file beside the embedded store's database;
    UserError for a tracking server without ``--storage``."""
    if given:
        if not urlsplit(given).scheme:
            raise UserError(f"--storage {given!r}: give an RDB URL, e.g. sqlite:////path/optuna.db or postgresql://user@host/db")
        return given
    if store.folder is None:
        raise UserError(
            f"the MLflow store is the tracking server {store.tracking_uri}, which cannot hold an Optuna study; "
            "give --storage with an RDB URL (e.g. postgresql://user@host/optuna) where the study is kept"
        )
    return f"sqlite:///{store.folder / STUDY_FILE}"


def shown_url(url: str) -> str:
    """``url`` without a password, to print and log."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


def storage(url: str) -> optuna.storages.RDBStorage:
    """The RDB storage at ``url`` (SQLite waits up to 60 s for a lock another process holds)."""
    kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
    return optuna.storages.RDBStorage(url, engine_kwargs=kwargs)


def make_pruner(spec: dict[str, Any] | None, epochs: int) -> optuna.pruners.BasePruner:
    """The pruner of a space's ``pruner`` spec (:func:`attnlab.tuning.trials.parse_pruner`)."""
    if spec is None:
        return optuna.pruners.NopPruner()
    if spec["name"] == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=int(spec["startup_trials"]), n_warmup_steps=int(spec["warmup_epochs"]))
    if spec["name"] == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=int(spec["min_epochs"]), max_resource=max(epochs, 1), reduction_factor=int(spec["reduction_factor"])
        )
    return optuna.pruners.ThresholdPruner(lower=spec["lower"], upper=spec["upper"], n_warmup_steps=int(spec["warmup_epochs"]))


def open_study(url: str, name: str, space: Space, epochs: int) -> optuna.Study:
    """The study ``name`` at ``url``, created or loaded (``load_if_exists``), with TPE sampling
    seeded by :func:`attnlab.tuning.trials.sampler_seed` and the space's pruner."""
    where = storage(url)
    existing = {summary.study_name: summary for summary in optuna.get_all_study_summaries(where, include_best_trial=False)}
    held = existing[name].n_trials if name in existing else 0
    sampler = optuna.samplers.TPESampler(seed=sampler_seed(space.sampler_seed, [TrialRecord(i, "") for i in range(held)]))
    return optuna.create_study(
        storage=where, study_name=name, direction=direction(space.objective), sampler=sampler,
        pruner=make_pruner(space.pruner, epochs), load_if_exists=True,
    )  # fmt: skip


def distributions(space: Space) -> dict[str, optuna.distributions.BaseDistribution]:
    """Each dimension of ``space`` as an Optuna distribution."""
    made: dict[str, optuna.distributions.BaseDistribution] = {}
    for key, dim in space.dimensions.items():
        if isinstance(dim, Choice):
            made[key] = optuna.distributions.CategoricalDistribution(dim.values)
        elif dim.integer:
            made[key] = optuna.distributions.IntDistribution(int(dim.low), int(dim.high), log=dim.log, step=int(dim.step or 1))
        else:
            made[key] = optuna.distributions.FloatDistribution(dim.low, dim.high, log=dim.log, step=dim.step)
    return made


def records(study: optuna.Study) -> list[TrialRecord]:
    """The study's trials as :class:`~attnlab.tuning.trials.TrialRecord`."""
    found = []
    for trial in study.get_trials(deepcopy=False):
        seconds = (
            (trial.datetime_complete - trial.datetime_start).total_seconds() if trial.datetime_complete and trial.datetime_start else None
        )
        found.append(TrialRecord(trial.number, trial.state.name, trial.value, dict(trial.params), dict(trial.user_attrs), seconds))
    return found


def end_interrupted(study: optuna.Study, numbers: set[int] | None = None) -> list[int]:
    """End FAIL, as interrupted (they do not count against the budget), the study's trials left
    RUNNING or WAITING (of ``numbers`` when given): by a tune that was stopped, or that stops now.
    Their numbers."""
    ended = []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING)):
        if numbers is None or trial.number in numbers:
            optuna.trial.Trial(study, trial._trial_id).set_user_attr(OUTCOME_ATTR, INTERRUPTED)
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
            ended.append(trial.number)
    return ended


@dataclass(frozen=True)
class TrialLink:
    """What a trial's worker needs to report to its study: the storage URL, the study's name,
    the trial's id and number, the objective, the pruner spec and the epochs (Hyperband's budget)."""

    url: str
    study: str
    trial_id: int
    number: int
    objective: str
    pruner: dict[str, Any] | None
    epochs: int


def reporter(link: TrialLink) -> EpochListener:
    """An epoch listener (:mod:`attnlab.flows.run.epoch_hooks`) that reports each epoch's objective
    to the trial and raises :class:`~attnlab.tuning.trials.Pruned` when the pruner stops it."""
    opened: list[optuna.trial.Trial] = []

    def report(run_id: str, metrics: dict[str, float]) -> None:
        if not opened:
            study = optuna.load_study(study_name=link.study, storage=storage(link.url), pruner=make_pruner(link.pruner, link.epochs))
            opened.append(optuna.trial.Trial(study, link.trial_id))
        trial, epoch, value = opened[0], int(metrics["epoch"]), float(metrics[link.objective])
        if not math.isfinite(value):
            return
        trial.report(value, epoch)
        if trial.should_prune():
            raise Pruned(
                f"pruned at epoch {epoch} by the {link.pruner['name'] if link.pruner else ''} pruner: {link.objective} {value:.4f}"
            )

    return report
