"""Where the sweep figures put things: legends beside the data, never on it, and the band of
lengths no training source had spanning those lengths up to the plot's right edge."""

from __future__ import annotations

import pytest

from attnlab.viz.compare_plots import UNSEEN_LABEL, accuracy_by_length, learning_curves


def _summary(points: list[tuple[int, float]]) -> dict:
    """A train summary with exact match per source length and a two-epoch history."""
    return {
        "by_length": [{"length": n, "count": 10, "exact_match": e} for n, e in points],
        "history": [{"epoch": 1, "val_exact_match": 0.5, "train_loss": 1.0}, {"epoch": 2, "val_exact_match": 0.9, "train_loss": 0.4}],
    }


#: Accuracy high in the lower right corner, where a legend placed inside the axes would cover it.
RUNS = {
    "additive/bigru": [_summary([(n, 1.0) for n in range(5, 41)])],
    "none/gru": [_summary([(n, max(0.0, 1 - n / 20)) for n in range(5, 41)])],
}


def _legends(fig):
    return [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)


@pytest.mark.parametrize(
    "make",
    [lambda: accuracy_by_length(RUNS, train_max_length=20), lambda: learning_curves(RUNS)],
    ids=["accuracy_by_length", "learning_curves"],
)
def test_legends_stay_off_every_axes_and_inside_the_figure(make):
    fig = make()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = _legends(fig)
    assert legends, "the figure has a legend"
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), (legend, ax.get_title())
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1


def _band(ax):
    (band,) = [patch for patch in ax.patches if patch.get_label() == UNSEEN_LABEL]
    return band


def test_the_unseen_band_spans_every_longer_length_to_the_right_edge():
    fig = accuracy_by_length(RUNS, train_max_length=20)
    fig.canvas.draw()
    ax = fig.axes[0]
    box = _band(ax).get_window_extent(fig.canvas.get_renderer())
    area = ax.get_window_extent()
    to_pixels = ax.transData.transform
    assert box.x0 == pytest.approx(to_pixels((20.5, 0))[0], abs=1)
    assert box.x1 == pytest.approx(area.x1, abs=1)  # up to the plot's right edge
    assert box.y0 <= area.y0 + 1 and box.y1 >= area.y1 - 1  # the whole height
    longer = [x for line in ax.get_lines() for x in line.get_xdata() if x > 20]
    assert longer and all(box.x0 < to_pixels((x, 0))[0] < box.x1 for x in longer)
    assert box.width > 0.4 * area.width  # lengths 21-40 of 5-40: a visible share of the plot
    assert any(text.get_text() == UNSEEN_LABEL for text in ax.get_legend().get_texts())


def test_no_band_where_no_test_source_is_longer_and_the_label_names_the_longest():
    dates = {"scaled_dot/gru": [_summary([(10, 0.99)])], "none/gru": [_summary([(10, 0.6)])]}
    ax = accuracy_by_length(dates, train_max_length=10).axes[0]
    assert not [patch for patch in ax.patches if patch.get_label() == UNSEEN_LABEL]
    assert "training sources have at most 10" in ax.get_xlabel()
    assert UNSEEN_LABEL not in [text.get_text() for text in ax.get_legend().get_texts()]
