"""Alignment measures on hand-made weight matrices whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba

from attnlab.evaluation.alignment import AlignmentTally, alignment_metrics, modal_offset, nearest_offset
from attnlab.viz.alignment_plots import MODE_COLOUR, offset_chart, training_chart


def rows(*argmax: int, width: int = 8) -> np.ndarray:
    """A [Lt, width] weight matrix whose row t peaks (0.65) at argmax[t], the rest spread evenly."""
    weights = np.full((len(argmax), width), 0.35 / (width - 1))
    weights[np.arange(len(argmax)), argmax] = 0.65
    return weights


def aer(predicted: set, sure: set, possible: set) -> float:
    """Och & Ney (2003): 1 - (|A & S| + |A & P|) / (|A| + |S|), on link sets."""
    return 1 - (len(predicted & sure) + len(predicted & possible)) / (len(predicted) + len(sure))


def test_a_diagonal_attention_is_perfect_on_every_measure():
    metrics = alignment_metrics([np.eye(4)], [((0,), (1,), (2,), (3,))])
    assert metrics == {"alignment_accuracy": 1.0, "alignment_within_one": 1.0, "alignment_offset_mode": 0.0,
                       "alignment_shifted_accuracy": 1.0, "alignment_error_rate": 0.0}  # fmt: skip


def test_attention_one_position_late_scores_zero_strictly_and_full_after_the_shift():
    # every step looks one position right of its gold character: the case of the issue
    metrics = alignment_metrics([rows(1, 2, 3, 4)], [((0,), (1,), (2,), (3,))])
    assert metrics["alignment_accuracy"] == 0.0
    assert metrics["alignment_within_one"] == 1.0
    assert metrics["alignment_offset_mode"] == 1.0
    assert metrics["alignment_shifted_accuracy"] == 1.0
    assert metrics["alignment_error_rate"] == 1.0
    assert alignment_metrics([rows(3, 1, 0)], [((1,), (1,), (1,))])["alignment_within_one"] == 2 / 3  # +2 is out
    late_early = alignment_metrics([rows(0, 0, 1)], [((1,), (1,), (2,))])  # one position early
    assert late_early["alignment_offset_mode"] == -1.0 and late_early["alignment_shifted_accuracy"] == 1.0


def test_mixed_offsets_give_their_shares_and_the_modal_shift():
    tally = AlignmentTally()
    tally.add_weights(rows(1, 2, 2, 0), ((0,), (1,), (2,), (3,)))  # offsets +1, +1, 0, -3
    metrics = tally.metrics()
    assert metrics["alignment_accuracy"] == 0.25
    assert metrics["alignment_within_one"] == 0.75
    assert metrics["alignment_offset_mode"] == 1.0
    assert metrics["alignment_shifted_accuracy"] == 0.5  # argmax - 1 is gold on the two +1 steps
    table = tally.offset_table()
    assert table.to_dict(orient="list") == {"offset": [-3, 0, 1], "steps": [1, 1, 2], "share": [0.25, 0.25, 0.5]}


def test_error_rate_is_och_and_ney_with_every_gold_link_sure():
    # step 0: gold span (2, 3, 4), attention on 3; step 1: gold 5, attention on 7; step 2: gold 6, on 6
    argmax, gold = (3, 7, 6), ((2, 3, 4), (5,), (6,))
    predicted = {(t, a) for t, a in enumerate(argmax)}
    links = {(t, s) for t, g in enumerate(gold) for s in g}
    metrics = alignment_metrics([rows(*argmax)], [gold])
    assert metrics["alignment_error_rate"] == pytest.approx(aer(predicted, links, links))
    assert metrics["alignment_error_rate"] == pytest.approx(1 - 2 * 2 / (3 + 5))
    assert metrics["alignment_accuracy"] == pytest.approx(2 / 3)


def test_offsets_go_to_the_nearest_gold_position_and_shifts_count_any_gold():
    assert nearest_offset(6, (3, 4, 5)) == 1
    assert nearest_offset(4, (3, 5)) == 1  # a tie goes to the lower gold index
    assert nearest_offset(0, (3, 5)) == -3
    # a span: argmax 6 against gold (3, 4, 5) is +1 from the nearest, yet a shift of +2 lands in the span too
    tally = AlignmentTally()
    tally.add([6, 6], ((3, 4, 5), (3, 4, 5)))
    assert tally.metrics()["alignment_offset_mode"] == 1.0 and tally.metrics()["alignment_shifted_accuracy"] == 1.0
    assert tally.hits_by_shift[2] == 2 and tally.hits_by_shift[3] == 2 and tally.hits_by_shift[4] == 0


def test_modal_offset_ties_go_to_the_offset_nearest_zero_then_the_smaller():
    assert modal_offset({2: 2, 1: 2, -1: 2, 0: 1}) == -1
    assert modal_offset({1: 2, 3: 5}) == 3
    assert modal_offset({2: 1, -2: 1}) == -2
    assert modal_offset({}) is None


def test_empty_entries_eos_and_unknown_alignments_are_left_out():
    tally = AlignmentTally()
    # 年-like characters (empty gold) and the EOS row carry nothing; an unknown alignment adds nothing
    tally.add_weights(torch.tensor(rows(5, 0, 5, 1)), ((0,), (), (2,)))
    tally.add_weights(rows(0, 0), None)
    assert tally.steps == 2 and tally.gold_links == 2
    assert tally.metrics()["alignment_accuracy"] == 0.0
    assert tally.offset_table()["offset"].tolist() == [3, 5]


def test_no_aligned_step_gives_nan_and_an_empty_table():
    tally = AlignmentTally()
    tally.add_weights(rows(0), ((),))
    assert all(math.isnan(v) for v in tally.metrics().values())
    assert len(tally.metrics()) == 5
    assert tally.offset_table().empty


def test_examples_combine_as_one_tally():
    weights = [rows(1, 2, 3), rows(0, 5), rows(2, 2, 2, 2)]
    golds = [((0,), (1,), (2,)), ((0,), (4, 5)), ((2,), (3,), (), (1,))]
    tally = AlignmentTally()
    for w, g in zip(weights, golds):
        tally.add_weights(w, g)
    # one example holding every step gives the same numbers
    flat_argmax = [1, 2, 3, 0, 5, 2, 2, 2, 2]
    flat_gold = ((0,), (1,), (2,), (0,), (4, 5), (2,), (3,), (), (1,))
    assert alignment_metrics(weights, golds) == tally.metrics()
    one = AlignmentTally()
    one.add(flat_argmax, flat_gold)
    assert one.metrics() == tally.metrics()


def test_offset_chart_draws_one_bar_per_offset_the_mode_highlighted():
    tally = AlignmentTally()
    tally.add([1, 2, 3, 3], ((0,), (1,), (2,), (3,)))  # offsets +1, +1, +1, 0
    fig = offset_chart(tally.offset_table())
    ax = fig.axes[0]
    bars = ax.patches
    assert [round(b.get_x() + b.get_width() / 2) for b in bars] == [0, 1]
    assert [b.get_height() for b in bars] == [0.25, 0.75]
    assert [b.get_facecolor() == to_rgba(MODE_COLOUR) for b in bars] == [False, True]
    assert any("mode +1: 75%" in t.get_text() for t in ax.texts)
    fig.canvas.draw()


CURVE = [
    {"step": 0, "epoch": 0, "end_of_epoch": False, "exact_match": 0.0, "alignment_accuracy": 0.1, "alignment_within_one": 0.3},
    {"step": 6, "epoch": 1, "end_of_epoch": False, "exact_match": 0.0, "alignment_accuracy": 0.4, "alignment_within_one": 0.6},
    {"step": 12, "epoch": 1, "end_of_epoch": True, "exact_match": 0.5, "alignment_accuracy": 0.9, "alignment_within_one": 1.0},
    {"step": 24, "epoch": 2, "end_of_epoch": True, "exact_match": 1.0, "alignment_accuracy": float("nan"), "alignment_within_one": 1.0},
]


def test_training_chart_draws_each_measure_against_the_optimisation_step():
    fig = training_chart(CURVE, examples=100)
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
    assert list(lines) == ["exact match", "alignment accuracy (argmax on gold)", "alignment within one position"]
    assert list(lines["exact match"].get_xdata()) == [0, 6, 12, 24]
    assert list(lines["exact match"].get_ydata()) == [0.0, 0.0, 0.5, 1.0]
    assert list(lines["alignment accuracy (argmax on gold)"].get_xdata()) == [0, 6, 12]  # NaN left out
    ends = [line.get_xdata()[0] for line in ax.get_lines() if line.get_label().startswith("_")]
    assert ends == [12, 24]  # a dotted line at each epoch's end
    assert ax.get_xlabel().startswith("optimisation step") and ax.get_ylabel() == "share of 100 validation examples"
    assert ax.get_ylim()[0] < 0 < 1 < ax.get_ylim()[1]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend, figure_box = ax.get_legend().get_window_extent(renderer), fig.bbox
    assert not legend.overlaps(ax.get_window_extent(renderer))  # beside the data, never on it
    assert figure_box.x0 <= legend.x0 and legend.x1 <= figure_box.x1


def test_training_chart_refuses_an_empty_curve():
    with pytest.raises(ValueError, match="empty"):
        training_chart([], examples=100)
