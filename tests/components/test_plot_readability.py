"""Figures read well: whole-epoch ticks and a plain loss axis on learning curves, heatmap axes
named after what they hold. Read back from the drawn matplotlib figures."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.viz.compare_plots import attention_side_by_side, learning_curves
from attnlab.viz.heatmaps import attention_heatmap, head_heatmaps


def _summary(losses: list[float]) -> dict:
    history = [{"epoch": e, "train_loss": loss, "val_exact_match": min(1.0, 0.3 * e)} for e, loss in enumerate(losses, 1)]
    return {"history": history}


def _labels(ticks) -> list[str]:
    return [t.get_text().replace("\u2212", "-") for t in ticks if t.get_text()]


@pytest.mark.parametrize("losses", [[2.1, 0.31, 0.05], [4e-5, 2e-5, 1e-5], [1.0012, 1.0008, 1.0005]])
def test_learning_curves_tick_whole_epochs_and_plain_loss_values(losses):
    fig = learning_curves({"gru/dot": [_summary(losses)], "gru/none": [_summary([x * 1.5 for x in losses])]})
    fig.canvas.draw()
    accuracy, loss = fig.axes
    for ax in (accuracy, loss):
        epochs = _labels(ax.get_xticklabels())
        assert epochs and all(label.lstrip("-").isdigit() for label in epochs), epochs
    values = _labels(loss.get_yticklabels())
    assert values and all("e" not in v.lower() and "10^" not in v and "×" not in v for v in values), values
    assert all(float(v) >= 0 for v in values) and loss.get_yscale() == "linear"
    assert loss.yaxis.get_offset_text().get_text() == ""  # no "1e-5" or "+1" above the axis
    assert max(float(v) for v in values) >= max(x * 1.5 for x in losses)  # the curves fit on the axis


def test_heatmaps_name_their_axes_source_and_output():
    tokens_in, tokens_out = list("25-12"), list("12月25")
    weights = np.full((len(tokens_out), len(tokens_in)), 1 / len(tokens_in))
    single = attention_heatmap(weights, tokens_in, tokens_out, "t").axes[0]
    heads = head_heatmaps(np.stack([weights, weights]), tokens_in, tokens_out).axes[:2]
    probe = {"source": "25-12", "source_tokens": tokens_in, "output_tokens": tokens_out, "weights": weights.tolist(), "correct": True}
    side = attention_side_by_side([("a", probe), ("b", probe)]).axes[:2]
    for ax in (single, *heads, *side):
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("source", "output")
        assert ax.xaxis.get_label_position() == "top"  # beside the source tokens, which are on top
