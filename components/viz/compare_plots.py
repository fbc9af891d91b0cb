"""Figures that compare the runs of a sweep (matplotlib, Agg canvas, no pyplot state).

Each takes ``runs``: combination label -> the train summaries of its finished runs (one per
seed), as returned by the train flow (``by_length``, ``history``, ``probe``).

- :func:`accuracy_by_length` — test exact match against source length, one line per combination
  (mean over seeds), the lengths beyond the longest training source shaded where test sources
  reach them: the view of Bahdanau et al. (2014), Figure 2;
- :func:`learning_curves` — validation exact match and training loss per epoch (whole-epoch
  ticks, a plain loss axis);
- :func:`attention_side_by_side` — the same input's attention under every combination.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator, ScalarFormatter

from attnlab.viz.heatmaps import cjk_font_family, draw_attention, marker_legend

UNSEEN_LABEL = "longer than any training source"

Runs = Mapping[str, Sequence[dict[str, Any]]]


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def legend_beside(ax: Axes) -> Legend | None:
    """The legend of ``ax``'s labelled artists to the right of the axes, outside the data area
    (the constrained layout keeps it in the picture); None when nothing is labelled."""
    if not ax.get_legend_handles_labels()[0]:
        return None
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize="small")


def mean_by_length(summaries: Sequence[dict[str, Any]]) -> pd.Series:
    """Exact match per source length pooled over ``summaries`` (weighted by example counts)."""
    rows = pd.DataFrame([r for s in summaries for r in s.get("by_length", [])], columns=["length", "count", "exact_match"])
    rows["hits"] = rows["count"] * rows["exact_match"]
    grouped = rows.groupby("length")[["hits", "count"]].sum()
    return (grouped["hits"] / grouped["count"]).rename("exact_match")


def accuracy_by_length(runs: Runs, train_max_length: int | None = None) -> Figure:
    """Test exact match [0, 1] against source length, one line per combination, the legend to
    the right of the axes. With ``train_max_length`` (the longest training source) the x label
    names it, and where test sources are longer the lengths beyond it are shaded up to the plot's
    right edge (see :func:`shade_unseen`)."""
    fig = _figure(8.0, 4.5)
    ax = fig.add_subplot()
    longest = None
    for label, summaries in runs.items():
        curve = mean_by_length(summaries)
        if len(curve):
            ax.plot(
                curve.index, curve.values, marker="o", markersize=3, label=f"{label} ({len(summaries)} seed{'s' * (len(summaries) > 1)})"
            )
            longest = max(longest or 0, int(curve.index.max()))
    xlabel = "source length (characters)"
    if train_max_length is not None:
        xlabel = f"source length (characters; training sources have at most {train_max_length})"
        if longest is not None and longest > train_max_length:
            shade_unseen(ax, train_max_length)
    ax.set_xlabel(xlabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("test exact match")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    legend_beside(ax)
    ax.set_title("accuracy against source length")
    return fig


def shade_unseen(ax: Axes, train_max_length: int) -> Rectangle:
    """Shade the lengths above ``train_max_length`` from halfway past it to the axes' right edge
    (drawn after the lines, whose limits it keeps: the span would widen them); the span."""
    left, right = ax.get_xlim()
    span = ax.axvspan(train_max_length + 0.5, right, color="0.85", zorder=0, label=UNSEEN_LABEL)
    ax.set_xlim(left, right)
    return span


def _mean_history(summaries: Sequence[dict[str, Any]], key: str) -> pd.Series:
    frame = pd.DataFrame([{"epoch": h["epoch"], key: h[key]} for s in summaries for h in s.get("history", [])], columns=["epoch", key])
    return frame.groupby("epoch")[key].mean()


def learning_curves(runs: Runs) -> Figure:
    """Validation exact match and training loss per epoch (mean over seeds), one line per
    combination (one legend, right of the loss axes); epochs ticked at whole numbers, the loss on
    a plain linear axis from 0 (decimals, no scientific notation or offset)."""
    fig = _figure(11.0, 4.0)
    left, right = fig.subplots(1, 2)
    for label, summaries in runs.items():
        for ax, key in ((left, "val_exact_match"), (right, "train_loss")):
            curve = _mean_history(summaries, key)
            if len(curve):
                ax.plot(curve.index, curve.values, marker="o", markersize=3, label=label)
    left.set(xlabel="epoch", ylabel="validation exact match", ylim=(-0.02, 1.02), title="validation exact match")
    right.set(xlabel="epoch", ylabel="training loss (cross-entropy)", title="training loss")
    right.set_ylim(bottom=0)
    plain = ScalarFormatter(useOffset=False)
    plain.set_scientific(False)
    right.yaxis.set_major_formatter(plain)
    for ax in (left, right):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    legend_beside(right if right.get_legend_handles_labels()[0] else left)
    return fig


def attention_side_by_side(panels: Sequence[tuple[str, dict[str, Any] | None]], max_columns: int = 3) -> Figure:
    """One heatmap per ``(label, probe)``; a probe is a weights record of the train flow
    (``source_tokens``, ``output_tokens``, ``weights`` [Lt, Ls] or None, ``prediction``,
    ``correct``, ``gold``: per output step the gold source indices, None or absent when unknown).
    A combination without weights (scorer ``none``, or a failed run) gets a note. Each heatmap
    dots its argmax per row and outlines the gold cells; one legend below the figure."""
    family = cjk_font_family()
    count = max(1, len(panels))
    cols = min(max_columns, count)
    rows = math.ceil(count / cols)
    longest = max((len(p["source_tokens"]) for _, p in panels if p), default=10)
    cell = max(3.5, 0.16 * longest + 1.5)
    fig = _figure(cell * cols + 1.0, cell * rows)
    axes = list(np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).flat)
    image, gold_shown = None, False
    for ax, (label, probe) in zip(axes, panels):
        if probe is None or probe.get("weights") is None:
            ax.set_axis_off()
            reason = "no run finished" if probe is None else "no attention weights (the decoder lives on the encoder summary)"
            ax.text(0.5, 0.5, f"{label}\n\n{reason}", ha="center", va="center", wrap=True)
            continue
        gold = probe.get("gold")
        image = draw_attention(
            ax, np.asarray(probe["weights"], dtype=float), probe["source_tokens"], probe["output_tokens"], family, gold, legend=False
        )
        gold_shown = gold_shown or gold is not None
        ax.tick_params(labelsize=6)
        mark = "right" if probe.get("correct") else "wrong"
        ax.set_title(f"{label} ({mark})", fontsize="medium")
    for ax in axes[len(panels) :]:
        ax.remove()
    if image is not None:
        fig.colorbar(image, ax=[a for a in axes[: len(panels)]], shrink=0.6, label="attention weight")
        marker_legend(fig, gold_shown)
    source = next((p["source"] for _, p in panels if p), None)
    if source is not None:
        fig.suptitle(f"attention on {source!r} (rows: output, columns: source)", fontfamily=family)
    return fig
