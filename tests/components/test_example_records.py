"""The examples a run draws (the sweep's probe first), their gold alignments, the records of
weights.json and the inputs logged with the model."""

from __future__ import annotations

import pandas as pd

from attnlab.evaluation.example_records import (
    attention_record,
    heatmap_title,
    merged_golds,
    model_examples,
    plotted_examples,
)
from attnlab.model.predict import Prediction

PREDICTIONS = pd.DataFrame(
    {"source": ["s0", "s1", "s2", "s3", "s4", "s5"], "target": ["t0", "t1", "t2", "t3", "t4", "t5"],
     "correct": [True, False, True, True, False, False]}
)  # fmt: skip


def test_a_run_draws_picked_test_examples_after_the_probe_with_its_gold():
    plotted = plotted_examples(PREDICTIONS, True, ["p", "q"], [[0]])
    assert plotted.sources == ["p", "s1", "s4", "s0", "s2"] and plotted.targets == ["q", "t1", "t4", "t0", "t2"]
    assert plotted.golds == [[[0]], None, None, None, None]
    assert plotted_examples(PREDICTIONS, True).sources == ["s1", "s4", "s0", "s2"]


def test_without_example_plots_only_the_probe_is_drawn():
    assert plotted_examples(PREDICTIONS, False, ["p", "q"]).sources == ["p"]
    assert plotted_examples(PREDICTIONS, False).sources == []


def test_the_model_is_logged_with_the_first_drawn_inputs_else_the_first_test_source():
    assert model_examples(["a", "b", "c", "d"], PREDICTIONS) == ["a", "b", "c"]
    assert model_examples([], PREDICTIONS) == ["s0"]


def test_a_given_gold_wins_over_the_one_found_in_the_test_split():
    assert merged_golds([[[1]], None], [[[0]], [[2]]]) == [[[1]], [[2]]]
    assert merged_golds(None, [None, [[2]]]) == [None, [[2]]]


def test_a_record_holds_the_prediction_its_attention_and_the_gold():
    prediction = Prediction("ab", "ba", ["a", "b"], ["b", "a", "<eos>"], [[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]], None)
    record = attention_record(prediction, "ba", [[1], [0]])
    assert record["correct"] and record["prediction"] == "ba" and record["gold"] == [[1], [0]]
    assert record["weights"][0] == [0.0, 1.0] and record["head_weights"] is None
    assert not attention_record(prediction, "ab", None)["correct"]
    assert heatmap_title(prediction, "ba") == "ab -> ba (right)" and heatmap_title(prediction, "xx") == "ab -> ba (wrong)"
