"""The explanation measures: on a hand-made model whose outputs depend on one source position
while its attention shows another, every measure is known."""

from __future__ import annotations

import math

import pytest
import torch
from explain_models import VOCAB, answered, one_position_model
from scipy.stats import kendalltau

from attnlab.data.vocab import pad_batch
from attnlab.evaluation.attribution import GRADIENT_METHODS
from attnlab.evaluation.explanations import (
    MEASURES,
    METHODS,
    ExplainOptions,
    agreeing_golds,
    explain_model,
    explain_options,
    kendall_tau_b,
)
from attnlab.lab.config import ExperimentConfig
from attnlab.model.decode import own_outputs
from attnlab.plugins import Example

SOURCES = ["abcd", "dcba", "bbad", "cadb", "dadc"]


@pytest.fixture(scope="module")
def measured():
    """Outputs on position 2, attention on position 0: the table by method."""
    model = one_position_model(2, shown=0)
    explanation = explain_model(model, [answered(model, source, 2) for source in SOURCES])
    return explanation, explanation.table.set_index("method")


def test_the_gradient_methods_are_aligned_and_faithful_and_attention_is_neither(measured):
    _, table = measured
    for method in GRADIENT_METHODS:
        row = table.loc[method]
        assert row["alignment_accuracy"] == row["alignment_within_one"] == 1.0
        assert row["alignment_error_rate"] == 0.0
        assert row["sufficiency"] == 0.0  # position 2 alone gives the same outputs
        assert row["comprehensiveness"] > 0.05
    attention = table.loc["attention"]
    assert attention["alignment_accuracy"] == attention["alignment_within_one"] == 0.0
    assert attention["alignment_offset_mode"] == -2.0 and attention["alignment_shifted_accuracy"] == 1.0
    assert attention["comprehensiveness"] == attention["flip_top"] == 0.0  # erasing position 0 changes nothing
    assert attention["sufficiency"] == pytest.approx(table.loc["saliency", "comprehensiveness"])  # it erases position 2
    assert attention["aligned_steps"] == attention["probed_steps"] == 3 * len(SOURCES)


def test_every_method_and_measure_is_a_metric(measured):
    explanation, table = measured
    assert list(table.index) == list(METHODS)
    assert explanation.metrics["explain_examples"] == len(SOURCES)
    for method in METHODS:
        for measure in MEASURES:
            if not measure.endswith("_steps"):
                assert f"explain_{method}_{measure}" in explanation.metrics
    assert math.isnan(explanation.metrics["explain_attention_kendall_tau"])
    # attention ranks position 0 first, the gradients rank position 2 first and the others tie at 0
    assert explanation.metrics["explain_saliency_kendall_tau"] < 0


def test_a_model_that_does_not_attend_is_explained_by_the_gradients_alone():
    model = one_position_model(1, shown=1, attends=False)
    explanation = explain_model(model, [answered(model, source, 1) for source in SOURCES[:2]])
    assert explanation.table["method"].tolist() == [*GRADIENT_METHODS, "random"]
    assert math.isnan(explanation.table.set_index("method").loc["saliency", "kendall_tau"])
    assert not any(name.startswith("explain_attention_") for name in explanation.metrics)


def test_the_gold_counts_while_the_output_agrees_with_the_target():
    model = one_position_model(2, shown=0)
    right = answered(model, "abcd", 2)
    wrong_second = Example("abcd", right.target[0] + ("a" if right.target[1] != "a" else "b") + right.target[2], right.alignment)
    src, mask = pad_batch([VOCAB.encode("abcd")] * 3)
    golds = agreeing_golds(model, own_outputs(model, src, mask), [right, wrong_second, Example("abcd", "x", None)])
    assert golds == [[(2,), (2,), (2,)], [(2,)], None]


@pytest.mark.filterwarnings("ignore:One or more sample arguments is too small")
def test_kendall_tau_b_is_scipys_with_ties_and_padding():
    generator = torch.Generator().manual_seed(0)
    x = torch.randint(0, 3, (300, 7), generator=generator).double()
    y = torch.randint(0, 3, (300, 7), generator=generator).double()
    valid = torch.arange(7) < torch.randint(1, 8, (300, 1), generator=generator)
    ours = kendall_tau_b(x, y, valid)
    theirs = torch.tensor([kendalltau(x[i][valid[i]].numpy(), y[i][valid[i]].numpy()).statistic for i in range(300)])
    assert torch.equal(ours.isnan(), theirs.isnan()) and ours.isnan().any()  # constant rows and single positions
    assert torch.allclose(ours.nan_to_num(), theirs.nan_to_num(), atol=1e-12)


def test_the_options_come_from_the_config():
    options = explain_options(ExperimentConfig(explain_examples=7, explain_steps=3, explain_baseline="unk", explain_top_k=2))
    assert options == ExplainOptions(examples=7, top_k=2, attribution=options.attribution)
    assert (options.attribution.steps, options.attribution.baseline) == (3, "unk")


def test_top_k_erases_and_keeps_k_tokens():
    model = one_position_model(0, shown=2)  # outputs on position 0, attention on position 2
    examples = [answered(model, source, 0) for source in SOURCES]
    single = explain_model(model, examples).table.set_index("method")
    double = explain_model(model, examples, ExplainOptions(top_k=2)).table.set_index("method")
    # attention ranks 2 first, then the tied 0 (ties go to the first position): its top 2 hold
    # the position the outputs depend on, its top 1 does not
    assert single.loc["attention", "comprehensiveness"] == 0.0 and single.loc["attention", "sufficiency"] > 0.05
    assert double.loc["attention", "comprehensiveness"] == pytest.approx(single.loc["saliency", "comprehensiveness"])
    assert double.loc["attention", "sufficiency"] == 0.0
    assert double.loc["attention", "flip_top"] == single.loc["attention", "flip_top"] == 0.0  # top-1 whatever k
    # the gradients rank 0 first, then the tied 1: their top 2 change nothing that matters
    assert double.loc["saliency", "comprehensiveness"] == pytest.approx(single.loc["saliency", "comprehensiveness"])
    assert double.loc["saliency", "sufficiency"] == single.loc["saliency", "sufficiency"] == 0.0
