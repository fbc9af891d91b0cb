"""Attention heatmaps with matplotlib.

Figures are built as ``matplotlib.figure.Figure`` objects (Agg canvas), never through pyplot's
global state, so plotting is thread-safe and works headless.

Shapes: ``Lt = len(output_tokens)`` (rows, y axis labelled "output"), ``Ls = len(source_tokens)``
(columns, top x axis labelled "source").

- :func:`draw_attention` draws one ``[Lt, Ls]`` matrix on a given axes (for composite figures);
- :func:`attention_heatmap` draws one ``[Lt, Ls]`` weight matrix;
- :func:`head_heatmaps` draws ``[H, Lt, Ls]`` weights, one subplot per head;
- :func:`marker_legend` explains the markers in one legend below a composite figure;
- :func:`save_figure` writes a PNG.

Every heatmap marks the most-attended source position of each output row (the argmax, a white
dot) and, when the gold alignment is known, outlines the gold cells (red squares). The gold of an
example is one list of source indices per output step (see :data:`attnlab.evaluation.alignment.Gold`); it
may be shorter than the rows (a prediction longer than its target, EOS), and an empty list means
the step comes from no source character.

Tick labels use a CJK-capable font (IPAexGothic from ``matplotlib-fontja``, see
:func:`cjk_font_family`) so outputs such as ``2023年12月25日`` render as real glyphs.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import font_manager
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from attnlab.viz.fonts import bundled_cjk_font

CMAP = "viridis"
MAX_COLUMNS = 4
#: Gold cells: outlined in red, which stands out on both ends of viridis (dark purple, yellow).
GOLD_COLOR = "red"
#: Gold outlines sit this far inside their cell, so neighbouring gold cells stay apart.
GOLD_INSET = 0.04
ARGMAX_LABEL = "most-attended source (argmax of the row)"
GOLD_LABEL = "gold alignment"


@functools.cache
def cjk_font_family() -> str:
    """Register the IPAexGothic font shipped by ``matplotlib-fontja``
    (:func:`attnlab.viz.fonts.bundled_cjk_font`) and return its family name. Only
    ``fontManager.addfont`` is called; rcParams are untouched."""
    font = str(bundled_cjk_font())
    font_manager.fontManager.addfont(font)
    return font_manager.FontProperties(fname=font).get_name()


def _as_array(weights: Any, ndim: int) -> np.ndarray:
    """Convert a torch tensor, numpy array or nested lists to a float numpy array of ``ndim`` dims."""
    if hasattr(weights, "detach"):  # torch.Tensor, without importing torch here
        weights = weights.detach().cpu().float().numpy()
    array = np.asarray(weights, dtype=float)
    if array.ndim != ndim:
        raise ValueError(f"expected a {ndim}-D weight array, got shape {tuple(array.shape)}")
    return array


def _check_shape(shape: tuple[int, ...], source_tokens: Sequence[str], output_tokens: Sequence[str]) -> None:
    expected = (len(output_tokens), len(source_tokens))
    if tuple(shape[-2:]) != expected:
        raise ValueError(f"weights shape {tuple(shape)} does not match (len(output_tokens), len(source_tokens)) = {expected}")


def argmax_cells(matrix: np.ndarray) -> list[tuple[int, int]]:
    """``(row, column)`` of the largest weight of each row of the ``[Lt, Ls]`` ``matrix`` that
    holds weights (finite, not all zero); ties go to the first column."""
    return [(r, int(np.argmax(row))) for r, row in enumerate(matrix) if row.size and np.isfinite(row).all() and row.max() > 0]


def gold_cells(gold: Sequence[Sequence[int]], rows: int, columns: int) -> list[tuple[int, int]]:
    """``(row, column)`` of every gold link of the first ``rows`` output steps. Raises
    ``ValueError`` for a source index outside ``0..columns-1`` (a gold of another example)."""
    cells = []
    for r, sources in enumerate(list(gold)[:rows]):
        for c in sources:
            if not 0 <= int(c) < columns:
                raise ValueError(f"gold index {c} of output step {r} is outside the {columns} source tokens")
            cells.append((r, int(c)))
    return cells


def marker_handles(gold: bool) -> list[Artist]:
    """Legend entries for the markers: the argmax dot, and the gold outline when ``gold``."""
    handles: list[Artist] = [
        Line2D([], [], linestyle="", marker="o", markersize=6, markerfacecolor="white", markeredgecolor="black", label=ARGMAX_LABEL)
    ]
    if gold:
        handles.append(Patch(facecolor="none", edgecolor=GOLD_COLOR, linewidth=2, label=GOLD_LABEL))
    return handles


def marker_legend(fig: Figure, gold: bool) -> Legend:
    """One legend below the whole (constrained-layout) figure, outside every axes and colorbar,
    explaining the argmax dot and, when ``gold``, the gold outline."""
    handles = marker_handles(gold)
    return fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize="small", frameon=False)


def draw_attention(
    ax: Axes,
    matrix: np.ndarray,
    source_tokens: Sequence[str],
    output_tokens: Sequence[str],
    family: str,
    gold: Sequence[Sequence[int]] | None = None,
    legend: bool = True,
) -> AxesImage:
    """Draw one ``[Lt, Ls]`` matrix on ``ax``: source on the top x axis, output on the y axis,
    each axis labelled with its name; a dot on the argmax of every row and, with ``gold``, a red
    outline around every gold cell (cell ``(row, column)`` is centred at ``x=column, y=row``).

    ``legend``: put a legend of the markers below the matrix (outside it; the x axis is on
    top). Composite figures pass False and call :func:`marker_legend` once. Returns the image.
    """
    image = ax.imshow(matrix, cmap=CMAP, vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(source_tokens)))
    ax.set_xticklabels([str(t) for t in source_tokens], fontfamily=family)
    ax.set_yticks(range(len(output_tokens)))
    ax.set_yticklabels([str(t) for t in output_tokens], fontfamily=family)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    ax.tick_params(length=0)
    if gold is not None:
        side = 1 - 2 * GOLD_INSET
        for r, c in gold_cells(gold, *matrix.shape):
            ax.add_patch(
                Rectangle((c - 0.5 + GOLD_INSET, r - 0.5 + GOLD_INSET), side, side, fill=False, edgecolor=GOLD_COLOR, linewidth=2, zorder=3)
            )
    peaks = argmax_cells(matrix)
    if peaks:
        rows, columns = zip(*peaks)
        ax.scatter(columns, rows, s=22, marker="o", facecolors="white", edgecolors="black", linewidths=0.8, zorder=4)
    if legend:
        handles = marker_handles(gold is not None)
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncols=1, fontsize="small", frameon=False)
    return image


def attention_heatmap(
    weights: Any,
    source_tokens: Sequence[str],
    output_tokens: Sequence[str],
    title: str | None = None,
    gold: Sequence[Sequence[int]] | None = None,
) -> Figure:
    """Heatmap of attention ``weights`` with shape ``[len(output_tokens), len(source_tokens)]``.

    Source tokens label the x axis (top), output tokens the y axis; colours span 0..1 with a
    colorbar; the argmax of each row is dotted and, with ``gold``, the gold cells outlined, a
    legend below the matrix saying so. Raises ``ValueError`` when the shape does not match the
    token counts.
    """
    matrix = _as_array(weights, 2)
    _check_shape(matrix.shape, source_tokens, output_tokens)
    family = cjk_font_family()
    fig = Figure(figsize=(max(4.5, 0.45 * len(source_tokens) + 2), max(3.5, 0.4 * len(output_tokens) + 2.0)), layout="constrained")
    FigureCanvasAgg(fig)  # Agg canvas: fig.canvas.draw() renders, no pyplot involved
    ax = fig.add_subplot()
    image = draw_attention(ax, matrix, source_tokens, output_tokens, family, gold)
    fig.colorbar(image, ax=ax)
    if title:
        fig.suptitle(title, fontfamily=family)
    return fig


def head_heatmaps(
    head_weights: Any,
    source_tokens: Sequence[str],
    output_tokens: Sequence[str],
    title: str | None = None,
    gold: Sequence[Sequence[int]] | None = None,
) -> Figure:
    """One heatmap per head for ``head_weights`` of shape ``[H, Lt, Ls]``.

    Heads are laid out in a grid of up to four columns, each titled ``"head k"``, sharing one
    0..1 colour scale and a single colorbar; each head's argmax per row is dotted and ``gold``
    (the same for every head) outlined, one legend below the grid.
    """
    weights = _as_array(head_weights, 3)
    _check_shape(weights.shape, source_tokens, output_tokens)
    family = cjk_font_family()
    heads = weights.shape[0]
    cols = max(1, min(MAX_COLUMNS, heads))
    rows = max(1, math.ceil(heads / cols))
    cell_w = max(3.0, 0.35 * len(source_tokens) + 1.5)
    cell_h = max(2.5, 0.3 * len(output_tokens) + 1.2)
    fig = Figure(figsize=(cell_w * cols + 1.0, cell_h * rows + 0.4), layout="constrained")
    FigureCanvasAgg(fig)
    grid = list(fig.subplots(rows, cols, squeeze=False).flat)
    for ax in grid[heads:]:  # unused cells of the last row
        ax.remove()
    image = None
    for k, ax in enumerate(grid[:heads]):
        image = draw_attention(ax, weights[k], source_tokens, output_tokens, family, gold, legend=False)
        ax.set_title(f"head {k}")
    if image is not None:
        fig.colorbar(image, ax=grid[:heads])
    marker_legend(fig, gold is not None)
    if title:
        fig.suptitle(title, fontfamily=family)
    return fig


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` as a PNG (dpi 120), creating parent folders; return the path. Every figure of
    attnlab has a constrained layout, which already keeps its titles, labels, colorbars and
    legends inside the picture: no tight bounding box, which would draw the figure a second time
    to measure it (9% of a heatmap's CPU time, 10% of a four-head grid's:
    ``benchmarks/bench_plots.py``). A character no installed font draws (an emoji in a
    user's data) is drawn as a box without matplotlib's warning on stderr: the figure still shows
    where it is."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        fig.savefig(path, format="png", dpi=120)
    return path
