"""What a tune leaves on its parent run once its trials are done: the trials table, Optuna's
optimisation history and parameter importance plots (``optuna.visualization.matplotlib``), the
best trial's config as YAML and its scores; and the summary ``attnlab tune`` prints."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import optuna
import yaml

from attnlab.flows.tracking import tune_runs
from attnlab.flows.tune import tune_study
from attnlab.lab.config import ExperimentConfig
from attnlab.tuning.space import Space, apply_values
from attnlab.tuning.trials import best_trial, counts, format_trials, trial_rows
from mlflow import MlflowClient

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def figures(study: optuna.Study, complete: int) -> dict[str, Any]:
    """Optuna's optimisation history (with a complete trial) and parameter importance (with 2 or
    more) plots as matplotlib figures; a plot Optuna cannot draw for these trials is left out."""
    from optuna.visualization import matplotlib as plots

    drawn: dict[str, Any] = {}
    makers: dict[str, Callable[[optuna.Study], Axes]] = {"optimization_history": plots.plot_optimization_history} if complete else {}
    if complete >= 2:
        makers["param_importances"] = plots.plot_param_importances
    for name, make in makers.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                drawn[name] = make(study).figure
        except (ValueError, RuntimeError, ZeroDivisionError) as exc:  # e.g. every complete trial with one value
            logging.getLogger("attnlab.tune").info("no %s plot: %s", name.replace("_", " "), exc)
    return drawn


def best_config_text(base: ExperimentConfig, params: dict[str, Any], number: int, value: float, objective: str) -> str:
    """The best trial's whole config as YAML, headed by where it comes from."""
    config = apply_values(base, params)
    head = f"# the best trial ({number}, {objective} {value:.4f}) of an attnlab tune; train it: attnlab train --config FILE\n"
    return head + yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def finish(client: MlflowClient, study: optuna.Study, space: Space, base: ExperimentConfig, parent_run_id: str) -> dict[str, Any]:
    """Log the study's results on its parent run; the summary's fields about them."""
    records = tune_study.records(study)
    runs = {number: run.info.run_id for number, run in tune_runs.trial_runs(client, parent_run_id).items()}
    best = best_trial(records, space.objective)
    rows = trial_rows(records, runs)
    states = [r.state for r in records if counts(r)]
    metrics = {f"trials_{state.lower()}": float(states.count(state)) for state in ("COMPLETE", "PRUNED", "FAIL")}
    config_text = None
    if best is not None:
        config_text = best_config_text(base, best.params, best.number, float(best.value or 0.0), space.objective)
        metrics["best_value"] = float(best.value or 0.0)
        client.set_tag(parent_run_id, "attnlab.tune.best_trial", str(best.number))
    drawn = figures(study, states.count("COMPLETE"))
    artifacts = tune_runs.log_results(client, parent_run_id, rows, config_text, drawn, metrics)
    import matplotlib.pyplot as plt

    for figure in drawn.values():
        plt.close(figure)
    return {
        "objective": space.objective,
        "trials": rows,
        "counted": len(states),
        "best": None
        if best is None
        else {"trial": best.number, "value": best.value, "params": best.params, "run_id": runs.get(best.number)},
        "best_config": config_text,
        "artifacts": artifacts,
        "text": format_trials(rows, space.objective, best),
    }
