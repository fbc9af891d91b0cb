"""The examples a run draws and what it records of each: which test examples get a heatmap (the
sweep's probe first), their gold alignments, the records of ``attention/weights.json`` and the
heatmaps' titles, and the input examples logged with the model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from attnlab.data.examples import EXAMPLE_PLOTS, pick_examples
from attnlab.model.predict import Prediction

#: A gold alignment as recorded: one list of source indices per target character.
Gold = list[list[int]]
#: Input examples logged with a model (MLflow shows them beside its signature).
MODEL_EXAMPLES = 3


@dataclass(frozen=True)
class Plotted:
    """The examples whose attention a run draws: sources, targets and gold alignments (None:
    unknown here; the test split may know it), in drawing order."""

    sources: list[str]
    targets: list[str]
    golds: list[Gold | None]


def plotted_examples(
    predictions: pd.DataFrame, example_plots: bool, probe: list[str] | None = None, probe_gold: Gold | None = None
) -> Plotted:
    """The test examples picked from an evaluation's ``predictions`` (:func:`pick_examples`; none
    unless ``example_plots``), after the ``[source, target]`` ``probe`` when given, with its
    ``probe_gold``."""
    sources, targets = pick_examples(predictions, count=EXAMPLE_PLOTS if example_plots else 0)
    golds: list[Gold | None] = [None] * len(sources)
    if probe:
        return Plotted([probe[0], *sources], [probe[1], *targets], [probe_gold, *golds])
    return Plotted(sources, targets, golds)


def model_examples(sources: list[str], predictions: pd.DataFrame) -> list[str]:
    """The input examples logged with the model: the first plotted ``sources``, else the first
    test source."""
    return sources[:MODEL_EXAMPLES] or [str(source) for source in predictions["source"].head(1)]


def merged_golds(given: list[Gold | None] | None, found: list[Gold | None]) -> list[Gold | None]:
    """Each example's gold alignment: the one ``given`` (None: not given), else the one ``found``
    (in the test split)."""
    return [mine if mine is not None else gold for mine, gold in zip(given or [None] * len(found), found)]


def attention_record(prediction: Prediction, target: str, gold: Gold | None) -> dict[str, Any]:
    """One record of ``weights.json``: the prediction of ``target``, its tokens, its attention
    (``weights``: [output, source]; ``head_weights``: [heads, output, source]; None without) and
    the gold alignment (None when unknown)."""
    return {
        "source": prediction.source,
        "target": target,
        "prediction": prediction.output,
        "correct": prediction.output == target,
        "source_tokens": prediction.source_tokens,
        "output_tokens": prediction.output_tokens,
        "weights": prediction.weights,
        "head_weights": prediction.head_weights,
        "gold": gold,
    }


def heatmap_title(prediction: Prediction, target: str) -> str:
    """``source -> output (right|wrong)``."""
    mark = "right" if prediction.output == target else "wrong"
    return f"{prediction.source} -> {prediction.output} ({mark})"
