"""The Prefect tasks that measure a trained model on its test split: the evaluation (every metric,
per-length table, predictions) and the explanations' table (attention beside the gradient
attributions). Each loads the run's bundle; the steps of a run call them in turn
(:mod:`attnlab.flows.run.run_steps`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import task
from prefect.cache_policies import NO_CACHE

from attnlab.data.datasets import load_splits
from attnlab.evaluation.explanation_measures import explanation_table
from attnlab.evaluation.metrics import Evaluation, evaluate
from attnlab.model.bundle import load_bundle


@task(name="evaluate", cache_policy=NO_CACHE)
def evaluate_bundle(bundle: Path, data: Path, beam_size: int, device: str = "cpu") -> Evaluation:
    """Metrics, per-length table and predictions of the bundled model on the test split."""
    _, _, model = load_bundle(bundle, device=device)
    return evaluate(model, load_splits(data).test, beam_size=beam_size)


@task(name="explain", cache_policy=NO_CACHE)
def explain_bundle(bundle: Path, data: Path, size: int, steps: int, device: str = "cpu") -> pd.DataFrame:
    """The explanations' table of the bundled model on ``size`` test examples
    (:func:`attnlab.evaluation.explanation_measures.explanation_table`; ``steps``: integrated
    gradients' points)."""
    _, _, model = load_bundle(bundle, device=device)
    return explanation_table(model, load_splits(data).test, size=size, steps=steps)
