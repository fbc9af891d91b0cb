"""Tests for attnlab.plots: attention heatmaps, CJK tick labels and PNG output."""

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from matplotlib import font_manager

from attnlab.plots import attention_heatmap, cjk_font_family, head_heatmaps, save_figure

SOURCE = list("25-12-2023")
OUTPUT = list("2023年12月25日")


def _weights(*shape: int) -> np.ndarray:
    raw = np.random.default_rng(0).random(shape)
    return raw / raw.sum(axis=-1, keepdims=True)


def test_heatmap_saves_png(tmp_path: Path) -> None:
    fig = attention_heatmap(torch.as_tensor(_weights(len(OUTPUT), len(SOURCE))), SOURCE, OUTPUT,
                            title="date task")
    path = save_figure(fig, tmp_path / "nested" / "heatmap.png")
    assert path == tmp_path / "nested" / "heatmap.png"
    data = path.read_bytes()
    assert len(data) > 1000 and data.startswith(b"\x89PNG")


def test_cjk_labels_render_as_glyphs(tmp_path: Path) -> None:
    family = cjk_font_family()
    resolved = font_manager.findfont(font_manager.FontProperties(family=[family]),
                                     fallback_to_default=False)
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
