"""Prefect tasks that show and measure explanations: the explanation measures of a run
(attention beside gradient attributions, :mod:`attnlab.evaluation.explanations`) and the
attention explorer page, with a switch to each attribution method. Thin wrappers, as in
:mod:`attnlab.flows.run.steps`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from attnlab.data.datasets import load_splits
from attnlab.evaluation.explanations import Explanation, attribution_options, explain_model, explain_options
from attnlab.evaluation.metrics import with_references
from attnlab.model.bundle import load_bundle
from attnlab.viz.explorer import write_explorer
from attnlab.viz.explorer_data import EXPLAINED_EXAMPLES, describe, model_views, run_document
from mlflow import MlflowClient


@task(name="explain", cache_policy=NO_CACHE)
def explain_bundle(bundle: Path, data: Path, scores: Path, device: str = "cpu") -> Explanation:
    """The explanation measures of the bundled model on a sample of its test split, with the
    options of its config's ``explain_*`` keys; the gradient methods' scores of the sample are
    written to ``scores`` (JSON, :attr:`~attnlab.evaluation.explanations.Explanation.scores`) for
    the explorer page to show."""
    config, _, model = load_bundle(bundle, device=device)
    explanation = explain_model(model, load_splits(data).test, explain_options(config))
    scores.parent.mkdir(parents=True, exist_ok=True)
    scores.write_text(json.dumps(explanation.scores, ensure_ascii=False))
    return explanation


@dataclass(frozen=True)
class Explored:
    """The explorer page written, and the model's explorer examples of the sources it was asked
    to show besides (a sweep's parent page compares its runs on them; None when not asked)."""

    page: Path
    compared: list[dict[str, Any]] | None


@task(name="explore-attention", cache_policy=NO_CACHE)
def explore_attention(
    run_id: str,
    bundle: Path,
    data: Path,
    metrics: dict[str, float],
    snapshots: Path | None,
    out_dir: Path,
    compare: list[str] | None = None,
    correct: list[bool] | None = None,
    explained: Path | None = None,
) -> Explored:
    """``out_dir/explorer.html``: the attention explorer (:mod:`attnlab.viz.explorer`) of the bundled
    model on its test split, wrong examples first (:func:`attnlab.viz.explorer_data.run_document`;
    ``correct``: greedy decoding's verdict on each test example, when the evaluation has it),
    those the explanation measures sampled explained by their gradient methods' scores
    (``explained``: the file :func:`explain_bundle` wrote), with the training's ``snapshots``;
    and, for ``compare``, the model's explorer examples of those sources (the first explained too,
    unless the config's ``explain`` is off)."""
    config, _, model = load_bundle(bundle)
    name = MlflowClient().get_run(run_id).info.run_name or run_id
    recorded = json.loads(snapshots.read_text()) if snapshots is not None else None
    tests = with_references(load_splits(data).test)[0]  # one per source, as the evaluation's verdicts
    given = json.loads(explained.read_text()) if explained is not None else None
    document = run_document(model, tests, name, describe(config), metrics, recorded, correct=correct, explained=given)
    page = write_explorer(document, out_dir / "explorer.html")
    if not compare:
        return Explored(page, None)
    return Explored(page, model_views(model, compare, explain=attribution_options(config), explained=EXPLAINED_EXAMPLES))
