"""The figure of ``attnlab compare --plot``: several runs' attention on the same inputs.

matplotlib with an Agg canvas, no pyplot state (as :mod:`attnlab.viz.heatmaps`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from attnlab.evaluation.alignment import Gold
from attnlab.viz.heatmaps import cjk_font_family, draw_attention, marker_legend


def _title(label: str, source: str, output: str, width: int = 24) -> str:
    shown = output if len(output) <= width else output[: width - 3] + "..."
    return f"{label}\n{source} -> {shown}"


def attention_by_run(labels: Sequence[str], predictions: Sequence[Sequence[Any]], golds: Sequence[Gold | None] | None = None) -> Figure:
    """One heatmap per run and input: a column per run (``labels``), a row per input.

    ``predictions[i][j]`` is run ``j``'s :class:`attnlab.model.predict.Prediction` for input ``i``
    (``source``, ``output``, ``source_tokens``, ``output_tokens``, ``weights`` [Lt, Ls] or None).
    A run without attention weights (scorer ``none``) gets a note instead of a heatmap; all
    heatmaps share one 0..1 colour scale. Each heatmap dots its argmax per row; ``golds[i]``, the
    gold alignment of input ``i`` when known (None otherwise), is outlined on that input's row of
    heatmaps. One legend below the figure names the markers shown.
    """
    if not labels or not predictions or any(len(row) != len(labels) for row in predictions):
        raise ValueError(f"need one prediction per run ({len(labels)}) for each input, got {[len(r) for r in predictions]}")
    golds = list(golds) if golds is not None else [None] * len(predictions)
    if len(golds) != len(predictions):
        raise ValueError(f"need one gold (or None) per input ({len(predictions)}), got {len(golds)}")
    family = cjk_font_family()
    rows, cols = len(predictions), len(labels)
    longest = max(len(p.source_tokens) for row in predictions for p in row)
    tallest = max(len(p.output_tokens) for row in predictions for p in row)
    width, height = max(3.5, 0.3 * longest + 1.5), max(3.0, 0.25 * tallest + 1.5)
    fig = Figure(figsize=(width * cols + 1.0, height * rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = np.atleast_2d(fig.subplots(rows, cols, squeeze=False))
    image = None
    for i, row in enumerate(predictions):
        for j, prediction in enumerate(row):
            ax = axes[i, j]
            if prediction.weights is None:
                ax.set_axis_off()
                ax.text(0.5, 0.5, _title(labels[j], prediction.source, prediction.output) + "\n\nno attention weights",
                        ha="center", va="center", fontfamily=family)  # fmt: skip
                continue
            matrix = np.asarray(prediction.weights, dtype=float)
            image = draw_attention(ax, matrix, prediction.source_tokens, prediction.output_tokens, family, golds[i], legend=False)
            ax.set_title(_title(labels[j], prediction.source, prediction.output), fontsize="medium", fontfamily=family)
            ax.set_xlabel("source")
            ax.set_ylabel("output")
    if image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.6, label="attention weight")
        marker_legend(fig, any(g is not None for g in golds))
    fig.suptitle("attention of each run on the same input(s)")
    return fig
