"""The alignment charts (matplotlib, Agg canvas, no pyplot state).

:func:`offset_chart` draws the share of aligned steps per offset (the most-attended source
position minus the nearest gold one, :mod:`attnlab.evaluation.alignment`) as bars, the modal offset
highlighted: a model whose attention settles one position from the gold character shows one
tall bar at +1 or -1 instead of at 0.

:func:`training_chart` draws the alignment curve of :class:`attnlab.viz.explorer_data.SnapshotRecorder`:
validation exact match and alignment against the optimisation step, so a run that stops after
one epoch still shows attention moving from diffuse to aligned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from attnlab.evaluation.alignment import modal_offset
from attnlab.viz.compare_plots import legend_beside

#: Bar colours: the modal offset, every other offset.
MODE_COLOUR, OTHER_COLOUR = "tab:orange", "tab:blue"


def offset_chart(table: pd.DataFrame, title: str | None = None) -> Figure:
    """Bars of ``table`` (columns offset, steps, share; :meth:`AlignmentTally.offset_table`):
    share of aligned steps [0, 1] per offset, the modal offset in :data:`MODE_COLOUR` and
    labelled with its share."""
    fig = Figure(figsize=(max(4.0, 0.35 * len(table) + 2.5), 3.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    mode = modal_offset(dict(zip(table["offset"], table["steps"])))
    colours = [MODE_COLOUR if offset == mode else OTHER_COLOUR for offset in table["offset"]]
    ax.bar(table["offset"], table["share"], color=colours, width=0.8)
    if mode is not None:
        share = float(table.loc[table["offset"] == mode, "share"].iloc[0])
        ax.annotate(f"mode {mode:+d}: {share:.0%}" if mode else f"mode 0: {share:.0%}", (mode, share), xytext=(0, 3), textcoords="offset points",
                    ha="center", va="bottom", fontsize="small")  # fmt: skip
    ax.axvline(0, color="0.6", linewidth=0.8, zorder=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("offset: most-attended position - nearest gold position")
    ax.set_ylabel("share of aligned steps")
    ax.set_title(title or "where attention lands, relative to the gold character")
    return fig


#: The curve's lines: point key, legend label, style.
CURVE_LINES = (
    ("exact_match", "exact match", dict(color="tab:green", marker="o")),
    ("alignment_accuracy", "alignment accuracy (argmax on gold)", dict(color="tab:blue", marker="s")),
    ("alignment_within_one", "alignment within one position", dict(color="tab:blue", marker="s", linestyle="--", alpha=0.6)),
)


def training_chart(curve: Sequence[Mapping[str, float]], examples: int, title: str | None = None) -> Figure:
    """Lines of ``curve`` (points with ``step``, ``end_of_epoch`` and the :data:`CURVE_LINES`
    keys; NaN ones left out): share [0, 1] of ``examples`` validation examples against the
    optimisation step, a dotted line at each epoch's end. Raises ValueError on an empty curve."""
    if not curve:
        raise ValueError("no points to draw: the alignment curve is empty")
    fig = Figure(figsize=(8.4, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for key, label, style in CURVE_LINES:
        points = [(p["step"], p[key]) for p in curve if key in p and math.isfinite(p[key])]
        if points:
            ax.plot(*zip(*points), label=label, **style)
    for step in [p["step"] for p in curve if p.get("end_of_epoch")]:
        ax.axvline(step, color="0.7", linestyle=":", linewidth=0.8, zorder=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("optimisation step (dotted: end of an epoch)")
    ax.set_ylabel(f"share of {examples} validation examples")
    ax.set_title(title or "alignment over training")
    legend_beside(ax)
    return fig
