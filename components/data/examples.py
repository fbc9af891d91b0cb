"""Which examples to show: the ones plotted per run, the probe shared by a sweep's runs and the
rows of the predictions table."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from attnlab.plugins import Example

if TYPE_CHECKING:  # type-only: reading runs' tables needs no torch
    from attnlab.data.splits import Splits

#: Rows of the sample-predictions table (wrong ones first).
SAMPLE_ROWS = 200
#: Test examples whose attention a run draws as heatmaps (besides a sweep's probe).
EXAMPLE_PLOTS = 4


def pick_examples(predictions: pd.DataFrame, count: int = EXAMPLE_PLOTS) -> tuple[list[str], list[str]]:
    """(sources, targets) to plot from an evaluation's predictions (columns source, target,
    correct): up to half of them wrong predictions, the rest right ones, in test order."""
    wrong = predictions[~predictions["correct"]].head(count // 2)
    chosen = pd.concat([wrong, predictions[predictions["correct"]].head(count - len(wrong))])
    return chosen["source"].tolist(), chosen["target"].tolist()


def pick_probe(splits: Splits, length: Callable[[str], int] = len) -> tuple[list[str], int]:
    """``[source, target]`` of the test example to show under every combination of a sweep (the
    longest source no longer than the longest training source, first such in test order) and the
    length of the longest training source; ``length`` counts a source's tokens (default: its
    characters)."""
    longest_train = max(length(example.source) for example in splits.train)
    candidates = [example for example in splits.test if length(example.source) <= longest_train] or splits.test
    chosen = max(candidates, key=lambda example: length(example.source))
    return [chosen.source, chosen.target], longest_train


def gold_alignments(examples: Sequence[Example], sources: Sequence[str], targets: Sequence[str]) -> list[list[list[int]] | None]:
    """The gold alignment of each ``(source, target)`` pair, as lists (one list of source indices
    per target character), taken from the first of ``examples`` with that source and target;
    None for a pair not among them or an example without alignment."""
    known: dict[tuple[str, str], list[list[int]] | None] = {}
    for example in examples:
        alignment = None if example.alignment is None else [list(map(int, step)) for step in example.alignment]
        known.setdefault((example.source, example.target), alignment)
    return [known.get((source, target)) for source, target in zip(sources, targets)]


def sample_predictions(predictions: pd.DataFrame, rows: int = SAMPLE_ROWS) -> pd.DataFrame:
    """Up to ``rows`` predictions, the wrong ones first (stable order otherwise)."""
    return predictions.sort_values("correct", kind="stable").head(rows).reset_index(drop=True)
