"""Tests for attnlab.viz.heatmaps: attention heatmaps, their argmax and gold markers, CJK tick labels and
PNG output."""

import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from matplotlib import font_manager
from matplotlib.patches import Rectangle

from attnlab.viz.compare_plots import attention_side_by_side
from attnlab.viz.heatmaps import ARGMAX_LABEL, GOLD_LABEL, attention_heatmap, cjk_font_family, head_heatmaps, save_figure
from attnlab.viz.run_plots import attention_by_run

SOURCE = list("25-12-2023")
OUTPUT = list("2023年12月25日")


def _weights(*shape: int) -> np.ndarray:
    raw = np.random.default_rng(0).random(shape)
    return raw / raw.sum(axis=-1, keepdims=True)


def test_heatmap_saves_png(tmp_path: Path) -> None:
    fig = attention_heatmap(torch.as_tensor(_weights(len(OUTPUT), len(SOURCE))), SOURCE, OUTPUT, title="date task")
    path = save_figure(fig, tmp_path / "nested" / "heatmap.png")
    assert path == tmp_path / "nested" / "heatmap.png"
    data = path.read_bytes()
    assert len(data) > 1000 and data.startswith(b"\x89PNG")


def test_cjk_labels_render_as_glyphs(tmp_path: Path) -> None:
    family = cjk_font_family()
    resolved = font_manager.findfont(font_manager.FontProperties(family=[family]), fallback_to_default=False)
    assert "dejavu" not in Path(resolved).name.lower()

    fig = attention_heatmap(_weights(len(OUTPUT), len(SOURCE)).tolist(), SOURCE, OUTPUT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph ... missing from font(s) ..." becomes an error
        warnings.filterwarnings("error", message=".*missing from.*")
        fig.canvas.draw()
        save_figure(fig, tmp_path / "cjk.png")


def test_head_heatmaps_one_axes_per_head() -> None:
    heads = 4
    fig = head_heatmaps(_weights(heads, len(OUTPUT), len(SOURCE)), SOURCE, OUTPUT, title="heads")
    titles = [ax.get_title() for ax in fig.axes]
    assert [t for t in titles if t.startswith("head")] == [f"head {k}" for k in range(heads)]
    assert len(fig.axes) == heads + 1  # plus the shared colorbar


def test_shape_mismatch_raises() -> None:
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(11, 10\)"):
        attention_heatmap(np.zeros((3, 4)), SOURCE, OUTPUT)
    with pytest.raises(ValueError, match=r"\(2, 3, 4\)"):
        head_heatmaps(np.zeros((2, 3, 4)), SOURCE, OUTPUT)


def test_rows_are_output_characters_and_columns_source_characters() -> None:
    source, output = list("abcde"), list("XYZ")
    weights = _weights(len(output), len(source))  # [Lt, Ls], no two entries alike
    single = attention_heatmap(weights, source, output).axes[0]
    heads = head_heatmaps(np.stack([weights, weights[:, ::-1]]), source, output).axes[:2]
    for ax, matrix in ((single, weights), (heads[0], weights), (heads[1], weights[:, ::-1])):
        assert [t.get_text() for t in ax.get_xticklabels()] == source
        assert [t.get_text() for t in ax.get_yticklabels()] == output
        np.testing.assert_array_equal(ax.get_images()[0].get_array(), matrix)
        # row 0 at the top: the first output character's weights are drawn first, top down
        assert ax.get_ylim()[0] > ax.get_ylim()[1]


# Markers: a hand-made [Lt=3, Ls=5] matrix (not square, so a transposed drawing cannot pass).
MARK_SOURCE, MARK_OUTPUT = list("abcde"), list("XYZ")
MARK_WEIGHTS = np.array(
    [
        [0.1, 0.1, 0.1, 0.6, 0.1],  # row 0: argmax column 3
        [0.7, 0.1, 0.1, 0.05, 0.05],  # row 1: argmax column 0
        [0.05, 0.05, 0.1, 0.1, 0.7],  # row 2: argmax column 4
    ]
)
MARK_ARGMAX = {(0, 3), (1, 0), (2, 4)}  # (row = output step, column = source position)
MARK_GOLD = [[2], [0, 1]]  # shorter than the rows: step 2 has no gold
MARK_GOLD_CELLS = {(0, 2), (1, 0), (1, 1)}


def _argmax_marks(ax) -> set[tuple[int, int]]:
    """(row, column) of every dot drawn on ``ax`` (scatter offsets are x = column, y = row)."""
    dots = [xy for collection in ax.collections for xy in collection.get_offsets()]
    return {(int(round(y)), int(round(x))) for x, y in dots}


def _gold_marks(ax) -> set[tuple[int, int]]:
    """(row, column) of the cell each outline on ``ax`` is centred on."""
    outlines = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert all(not p.get_fill() for p in outlines)
    centres = [(p.get_x() + p.get_width() / 2, p.get_y() + p.get_height() / 2) for p in outlines]
    assert all(abs(x - round(x)) < 1e-9 and abs(y - round(y)) < 1e-9 for x, y in centres), centres
    cells = [(int(round(y)), int(round(x))) for x, y in centres]
    assert len(cells) == len(set(cells))  # one outline per gold cell
    return set(cells)


def _legend_labels(legend) -> list[str]:
    return [t.get_text() for t in legend.get_texts()]


def _no_overlap(fig, legend) -> None:
    """The legend lies inside the figure and covers no axes (heatmaps, colorbar)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    whole = fig.bbox
    assert whole.x0 - 1 <= box.x0 and box.x1 <= whole.x1 + 1 and whole.y0 - 1 <= box.y0 and box.y1 <= whole.y1 + 1
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent(renderer)), ax


def test_single_heatmap_dots_the_argmax_and_outlines_the_gold_cells() -> None:
    fig = attention_heatmap(MARK_WEIGHTS, MARK_SOURCE, MARK_OUTPUT, "t", gold=MARK_GOLD)
    ax = fig.axes[0]
    assert _argmax_marks(ax) == MARK_ARGMAX
    assert _gold_marks(ax) == MARK_GOLD_CELLS
    assert _legend_labels(ax.get_legend()) == [ARGMAX_LABEL, GOLD_LABEL]
    _no_overlap(fig, ax.get_legend())


def test_without_gold_no_outlines_and_the_legend_names_the_argmax_only() -> None:
    fig = attention_heatmap(MARK_WEIGHTS, MARK_SOURCE, MARK_OUTPUT)
    ax = fig.axes[0]
    assert _argmax_marks(ax) == MARK_ARGMAX
    assert not ax.patches
    assert _legend_labels(ax.get_legend()) == [ARGMAX_LABEL]
    heads = head_heatmaps(np.stack([MARK_WEIGHTS, MARK_WEIGHTS]), MARK_SOURCE, MARK_OUTPUT)
    assert all(not ax.patches for ax in heads.axes)
    assert _legend_labels(heads.legends[0]) == [ARGMAX_LABEL]


def test_head_grid_marks_each_heads_argmax_and_the_shared_gold() -> None:
    flipped = MARK_WEIGHTS[:, ::-1]  # head 1's argmax mirrored: column c -> 4 - c
    fig = head_heatmaps(np.stack([MARK_WEIGHTS, flipped]), MARK_SOURCE, MARK_OUTPUT, gold=MARK_GOLD)
    head0, head1 = fig.axes[:2]
    assert _argmax_marks(head0) == MARK_ARGMAX
    assert _argmax_marks(head1) == {(r, 4 - c) for r, c in MARK_ARGMAX}
    assert _gold_marks(head0) == _gold_marks(head1) == MARK_GOLD_CELLS
    assert [ax.get_legend() for ax in fig.axes] == [None] * len(fig.axes)  # one legend, the figure's
    (legend,) = fig.legends
    assert _legend_labels(legend) == [ARGMAX_LABEL, GOLD_LABEL]
    _no_overlap(fig, legend)


def test_side_by_side_outlines_the_probes_gold() -> None:
    probe = {
        "source": "abcde",
        "source_tokens": MARK_SOURCE,
        "output_tokens": MARK_OUTPUT,
        "weights": MARK_WEIGHTS.tolist(),
        "correct": True,
        "gold": MARK_GOLD,
    }
    unknown = {**probe, "gold": None}
    fig = attention_side_by_side([("a", probe), ("b", unknown), ("none", {**probe, "weights": None})])
    a, b = fig.axes[:2]
    assert _argmax_marks(a) == _argmax_marks(b) == MARK_ARGMAX
    assert _gold_marks(a) == MARK_GOLD_CELLS and not b.patches
    (legend,) = fig.legends
    assert _legend_labels(legend) == [ARGMAX_LABEL, GOLD_LABEL]
    _no_overlap(fig, legend)
    old = {key: value for key, value in unknown.items() if key != "gold"}  # a record written before gold was
    (legend,) = attention_side_by_side([("a", old)]).legends
    assert _legend_labels(legend) == [ARGMAX_LABEL]


def test_runs_figure_outlines_gold_where_known() -> None:
    def prediction(weights):
        return SimpleNamespace(source="abcde", output="XYZ", source_tokens=MARK_SOURCE, output_tokens=MARK_OUTPUT, weights=weights)

    grid = [[prediction(MARK_WEIGHTS.tolist()), prediction(None)], [prediction(MARK_WEIGHTS.tolist()), prediction(None)]]
    fig = attention_by_run(["run a", "run b"], grid, golds=[MARK_GOLD, None])
    known, unknown = fig.axes[0], fig.axes[2]  # input 0 and input 1 under run a
    assert _argmax_marks(known) == _argmax_marks(unknown) == MARK_ARGMAX
    assert _gold_marks(known) == MARK_GOLD_CELLS and not unknown.patches
    assert _legend_labels(fig.legends[0]) == [ARGMAX_LABEL, GOLD_LABEL]
    assert _legend_labels(attention_by_run(["run a", "run b"], grid).legends[0]) == [ARGMAX_LABEL]


def test_rows_without_weights_get_no_argmax_and_foreign_gold_is_refused() -> None:
    weights = MARK_WEIGHTS.copy()
    weights[1] = 0.0  # e.g. a padded step
    assert _argmax_marks(attention_heatmap(weights, MARK_SOURCE, MARK_OUTPUT).axes[0]) == MARK_ARGMAX - {(1, 0)}
    with pytest.raises(ValueError, match="gold index 5 of output step 0"):
        attention_heatmap(MARK_WEIGHTS, MARK_SOURCE, MARK_OUTPUT, gold=[[5]])


def test_a_character_no_font_draws_gives_no_warning_on_stderr(tmp_path, capfd):
    """An emoji in a user's data is drawn as a box, without matplotlib's 'Glyph ... missing'
    warning (one per glyph and figure, it flooded the terminal)."""
    import warnings

    from attnlab.viz.heatmaps import attention_heatmap, save_figure

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save_figure(attention_heatmap([[0.5, 0.5], [1.0, 0.0]], ["😀", "🙂"], ["🚀", "<eos>"], "😀🙂 -> 🚀"), tmp_path / "emoji.png")
    assert (tmp_path / "emoji.png").stat().st_size > 0
    assert not [w for w in caught if "Glyph" in str(w.message)]
    assert "Glyph" not in capfd.readouterr().err
