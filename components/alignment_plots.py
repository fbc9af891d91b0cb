"""The alignment offset chart (matplotlib, Agg canvas, no pyplot state).

:func:`offset_chart` draws the share of aligned steps per offset (the most-attended source
position minus the nearest gold one, :mod:`attnlab.alignment`) as bars, the modal offset
highlighted: a model whose attention settles one position from the gold character shows one
tall bar at +1 or -1 instead of at 0.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from attnlab.alignment import modal_offset

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
