"""Attention heatmaps with matplotlib.

Figures are built as ``matplotlib.figure.Figure`` objects (Agg canvas), never through pyplot's
global state, so plotting is thread-safe and works headless.

Shapes: ``Lt = len(output_tokens)`` (rows, y axis labelled "output"), ``Ls = len(source_tokens)``
(columns, top x axis labelled "source").

- :func:`draw_attention` draws one ``[Lt, Ls]`` matrix on a given axes (for composite figures);
- :func:`attention_heatmap` draws one ``[Lt, Ls]`` weight matrix;
- :func:`head_heatmaps` draws ``[H, Lt, Ls]`` weights, one subplot per head;
- :func:`save_figure` writes a PNG.

Tick labels use a CJK-capable font (IPAexGothic from ``matplotlib-fontja``, see
:func:`cjk_font_family`) so outputs such as ``2023年12月25日`` render as real glyphs.
"""

from __future__ import annotations

import functools
import importlib.util
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

CMAP = "viridis"
MAX_COLUMNS = 4


@functools.cache
def cjk_font_family() -> str:
    """Register the IPAexGothic font shipped by ``matplotlib-fontja`` and return its family name.

    The package folder is located with ``importlib.util.find_spec`` *without importing it*:
    importing ``matplotlib_fontja`` calls ``japanize()``, which rewrites the global
    ``rcParams["font.family"]``. Here only ``fontManager.addfont`` is called; rcParams are untouched.
    """
    spec = importlib.util.find_spec("matplotlib_fontja")
    dirs = list(spec.submodule_search_locations or []) if spec else []
    fonts = sorted(p for d in dirs for p in Path(d, "fonts").glob("*.ttf"))
    if not fonts:
        raise RuntimeError(
            "No CJK font found: install the 'matplotlib-fontja' package "
            "(pip install matplotlib-fontja) to render CJK tick labels."
        )
    font_manager.fontManager.addfont(str(fonts[0]))
    return font_manager.FontProperties(fname=str(fonts[0])).get_name()


def _as_array(weights: Any, ndim: int) -> np.ndarray:
    """Convert a torch tensor, numpy array or nested lists to a float numpy array of ``ndim`` dims."""
    if hasattr(weights, "detach"):  # torch.Tensor, without importing torch here
        weights = weights.detach().cpu().float().numpy()
    array = np.asarray(weights, dtype=float)
    if array.ndim != ndim:
        raise ValueError(f"expected a {ndim}-D weight array, got shape {tuple(array.shape)}")
    return array


def _check_shape(shape: tuple[int, ...], source_tokens: Sequence[str],
                 output_tokens: Sequence[str]) -> None:
    expected = (len(output_tokens), len(source_tokens))
    if tuple(shape[-2:]) != expected:
        raise ValueError(
            f"weights shape {tuple(shape)} does not match (len(output_tokens), len(source_tokens)) "
            f"= {expected}"
        )


def draw_attention(ax, matrix: np.ndarray, source_tokens: Sequence[str],
                   output_tokens: Sequence[str], family: str):
    """Draw one ``[Lt, Ls]`` matrix on ``ax``: source on the top x axis, output on the y axis,
    each axis labelled with its name."""
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
    return image


def attention_heatmap(weights: Any, source_tokens: Sequence[str], output_tokens: Sequence[str],
                      title: str | None = None) -> Figure:
    """Heatmap of attention ``weights`` with shape ``[len(output_tokens), len(source_tokens)]``.

    Source tokens label the x axis (top), output tokens the y axis; colours span 0..1 with a
    colorbar. Raises ``ValueError`` when the shape does not match the token counts.
    """
    matrix = _as_array(weights, 2)
    _check_shape(matrix.shape, source_tokens, output_tokens)
    family = cjk_font_family()
    fig = Figure(figsize=(max(4.0, 0.45 * len(source_tokens) + 2),
                          max(3.0, 0.4 * len(output_tokens) + 1.5)))
    FigureCanvasAgg(fig)  # Agg canvas: fig.canvas.draw() renders, no pyplot involved
    ax = fig.add_subplot()
    image = draw_attention(ax, matrix, source_tokens, output_tokens, family)
    fig.colorbar(image, ax=ax)
    if title:
        fig.suptitle(title, fontfamily=family)
    return fig


def head_heatmaps(head_weights: Any, source_tokens: Sequence[str], output_tokens: Sequence[str],
                  title: str | None = None) -> Figure:
    """One heatmap per head for ``head_weights`` of shape ``[H, Lt, Ls]``.

    Heads are laid out in a grid of up to four columns, each titled ``"head k"``, sharing one
    0..1 colour scale and a single colorbar.
    """
    weights = _as_array(head_weights, 3)
    _check_shape(weights.shape, source_tokens, output_tokens)
    family = cjk_font_family()
    heads = weights.shape[0]
    cols = max(1, min(MAX_COLUMNS, heads))
    rows = max(1, math.ceil(heads / cols))
    cell_w = max(3.0, 0.35 * len(source_tokens) + 1.5)
    cell_h = max(2.5, 0.3 * len(output_tokens) + 1.2)
    fig = Figure(figsize=(cell_w * cols + 1.0, cell_h * rows), layout="constrained")
    FigureCanvasAgg(fig)
    grid = list(fig.subplots(rows, cols, squeeze=False).flat)
    for ax in grid[heads:]:  # unused cells of the last row
        ax.remove()
    image = None
    for k, ax in enumerate(grid[:heads]):
        image = draw_attention(ax, weights[k], source_tokens, output_tokens, family)
        ax.set_title(f"head {k}")
    if image is not None:
        fig.colorbar(image, ax=grid[:heads])
    if title:
        fig.suptitle(title, fontfamily=family)
    return fig


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` as a PNG (dpi 120, tight bounding box), creating parent folders; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=120, bbox_inches="tight")
    return path
