"""Alignment measures: how the most-attended source position of each output step relates to the
gold alignment.

A model's attention often settles a fixed distance from the gold character (a unidirectional
encoder's output at position i + 1 already holds character i), so the strict measure alone can
read near zero for a model that attends perfectly consistently. These measures show it:

- ``alignment_accuracy`` (strict): share of aligned steps whose most-attended position (argmax)
  is a gold one;
- ``alignment_within_one``: share whose argmax is within +-1 of a gold position;
- the **offset** of a step: argmax minus the nearest gold position (a tie between two golds
  goes to the lower one, so the offset is the larger); :meth:`AlignmentTally.offset_table` gives
  the share of steps per offset, ``alignment_offset_mode`` the most common offset (ties: the one
  nearest 0, then the smaller);
- ``alignment_shifted_accuracy``: the strict measure after moving every argmax back by the
  modal offset (argmax - mode is a gold position);
- ``alignment_error_rate``: AER of Och & Ney (2003), ``1 - (|A & S| + |A & P|) / (|A| + |S|)``
  with every gold link sure (S = P = gold links), over the whole split. The predicted links A are
  one per aligned step, (step, argmax); a step whose gold is empty carries no link on either side
  (attention always points somewhere, so it cannot say "nowhere").

"Aligned steps" are the target characters with a non-empty gold entry; EOS and characters that
come from no source position (``年`` in the date task) are left out of every measure, as are
examples whose alignment is unknown (None).

Inputs are plain: per example, the argmax per target step (e.g. ``weights.argmax(-1)`` of a
``[Lt, Ls]`` weight matrix) and the gold alignment (one tuple of source indices per target
character). No torch needed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

#: Gold alignment of one example: per target character, the source positions it comes from.
Gold = Sequence[Sequence[int]]


def nearest_offset(position: int, gold: Sequence[int]) -> int:
    """``position`` minus the nearest gold index (ties: the lower gold index). ``gold`` non-empty."""
    return min((position - g for g in gold), key=lambda d: (abs(d), -d))


def modal_offset(counts: Mapping[int, int]) -> int | None:
    """The most common offset (ties: nearest 0, then the smaller); None when there is none."""
    if not counts:
        return None
    return min(counts, key=lambda d: (-counts[d], abs(d), d))


@dataclass
class AlignmentTally:
    """Running counts behind the alignment measures, so batches combine exactly.

    steps: aligned steps; hits_by_shift[k]: aligned steps where argmax - k is a gold position
    (k = 0 is the strict hit); near_hits: steps within +-1; offsets: steps per nearest offset;
    gold_links: |S|, the number of gold (step, source) links of the aligned steps.
    """

    steps: int = 0
    near_hits: int = 0
    gold_links: int = 0
    hits_by_shift: Counter[int] = field(default_factory=Counter)
    offsets: Counter[int] = field(default_factory=Counter)

    def add(self, argmax: Sequence[int], gold: Gold | None) -> None:
        """One example: ``argmax`` [Lt'] the most-attended source position per target step
        (Lt' >= the gold's length; extra steps such as EOS are ignored), ``gold`` its alignment
        or None (unknown: nothing counted)."""
        if gold is None:
            return
        for position, links in zip(argmax, gold):
            if not links:
                continue
            position = int(position)
            self.steps += 1
            self.gold_links += len(links)
            self.hits_by_shift.update({position - g for g in links})
            offset = nearest_offset(position, links)
            self.near_hits += abs(offset) <= 1
            self.offsets[offset] += 1

    def add_weights(self, weights: Any, gold: Gold | None) -> None:
        """One example from its weight matrix [Lt', Ls] (numpy, torch or nested lists)."""
        if gold is None:
            return
        if hasattr(weights, "detach"):  # a torch tensor, without importing torch here
            weights = weights.detach().cpu().numpy()
        self.add(np.asarray(weights).argmax(axis=-1).tolist(), gold)

    @property
    def mode(self) -> int | None:
        """The modal offset (see :func:`modal_offset`)."""
        return modal_offset(self.offsets)

    def metrics(self) -> dict[str, float]:
        """alignment_accuracy, alignment_within_one, alignment_offset_mode,
        alignment_shifted_accuracy, alignment_error_rate; NaN without an aligned step."""
        mode = self.mode  # None exactly when there is no aligned step
        if not self.steps or mode is None:
            names = ("accuracy", "within_one", "offset_mode", "shifted_accuracy", "error_rate")
            return {f"alignment_{name}": math.nan for name in names}
        hits = self.hits_by_shift[0]
        return {
            "alignment_accuracy": hits / self.steps,
            "alignment_within_one": self.near_hits / self.steps,
            "alignment_offset_mode": float(mode),
            "alignment_shifted_accuracy": self.hits_by_shift[mode] / self.steps,
            # |A| = steps (one link each), |A & S| = |A & P| = hits.
            "alignment_error_rate": 1.0 - 2 * hits / (self.steps + self.gold_links),
        }

    def offset_table(self) -> pd.DataFrame:
        """Columns offset, steps, share (of aligned steps), one row per offset seen, by offset."""
        rows = sorted(self.offsets.items())
        table = pd.DataFrame(rows, columns=["offset", "steps"]).astype({"offset": int, "steps": int})
        table["share"] = table["steps"] / max(self.steps, 1)
        return table


def alignment_metrics(weights: Sequence[Any], golds: Sequence[Gold | None]) -> dict[str, float]:
    """The measures of :class:`AlignmentTally` over examples: ``weights[i]`` [Lt_i, Ls_i] and
    ``golds[i]`` the alignment of example i."""
    tally = AlignmentTally()
    for matrix, gold in zip(weights, golds):
        tally.add_weights(matrix, gold)
    return tally.metrics()
