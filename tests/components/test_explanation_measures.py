"""Explanation measures on a model whose explanation is known (it reads one source position),
Kendall's tau on hand-made scores, and a model without attention."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from explained_models import KEPT, OnePositionEncoder, built_model

from attnlab.data.splits import encode_examples
from attnlab.data.vocab import PAD
from attnlab.evaluation.attribution import METHODS
from attnlab.evaluation.explanation_measures import EXPLANATIONS, MEASURES, explanation_metrics, explanation_table, mean_tau
from attnlab.lab import metric_catalogue
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_task
from attnlab.plugins import Example


def _one_position_model_and_examples():
    """The hand-made model and 12 examples of 5-6 characters, every target character aligned
    to the one position the model reads."""
    torch.manual_seed(0)
    model, _, _ = built_model(scorer="additive")
    model.encoder = OnePositionEncoder(model.encoder.vocab_size, 4, 8)
    config = ExperimentConfig(task="reverse", task_options={"min_length": 5, "max_length": 6})
    examples = [Example(e.source, e.target, tuple((KEPT,) for _ in e.target)) for e in build_task(config).generate(12, seed=3)]
    return model, examples


def test_the_position_a_model_reads_is_aligned_sufficient_and_carries_the_output():
    model, examples = _one_position_model_and_examples()
    table = explanation_table(model, examples, steps=16)
    assert list(table.index) == list(EXPLANATIONS) and list(table.columns) == list(MEASURES)
    for method in METHODS:
        row = table.loc[method]
        assert (row["within_one"], row["shifted_accuracy"], row["error_rate"]) == (1.0, 1.0, 0.0)
        assert row["sufficiency"] == pytest.approx(0.0, abs=1e-6)  # that position alone gives the same output

    # comprehensiveness: the probability of each gold token minus that with the read position erased
    data = encode_examples(examples, model.src_vocab, model.tgt_vocab).trimmed()
    tgt_in, targets = data.tgt[:, :-1], data.tgt[:, 1:]
    erased = data.src.clone()
    erased[:, KEPT] = PAD
    with torch.no_grad():
        full = model(data.src, data.src_mask, tgt_in).logits.softmax(-1).gather(2, targets.unsqueeze(2)).squeeze(2)
        gone = model(erased, data.src_mask, tgt_in).logits.softmax(-1).gather(2, targets.unsqueeze(2)).squeeze(2)
    expected = float((full - gone)[targets != PAD].mean())
    for method in METHODS:
        assert table.loc[method, "comprehensiveness"] == pytest.approx(expected, abs=1e-6)


def test_kendalls_tau_over_the_real_positions_of_each_step():
    scores = torch.tensor([[[0.1, 0.2, 0.3, 9.0]], [[0.5, 0.5, 0.5, 0.0]]])  # [N=2, T=1, Ls=4]
    src_mask = torch.tensor([[True, True, True, False], [True, True, True, False]])
    live = torch.ones(2, 1, dtype=torch.bool)
    same = torch.tensor([[[0.2, 0.3, 0.5, 0.0]], [[0.2, 0.3, 0.5, 0.0]]])
    reverse = torch.tensor([[[0.5, 0.3, 0.2, 0.0]], [[0.5, 0.3, 0.2, 0.0]]])
    assert mean_tau(scores, same, live, src_mask) == pytest.approx(1.0)  # the constant second row has no tau
    assert mean_tau(scores, reverse, live, src_mask) == pytest.approx(-1.0)  # the padded 9.0 is not ranked
    assert math.isnan(mean_tau(scores, None, live, src_mask))


def test_the_catalogue_declares_every_explanation_and_measure_the_table_has():
    declared = {m.name for m in metric_catalogue.CATALOGUE}
    computed = {f"explain_{e}_{m}" for e in EXPLANATIONS for m in MEASURES} - {"explain_attention_tau_attention"}
    assert computed <= declared and metric_catalogue.EXPLANATIONS == EXPLANATIONS
    assert {m for group in metric_catalogue.EXPLANATION_MEASURES.values() for m, _, _ in group} == set(MEASURES)


def test_kendalls_tau_equals_scipys_tau_b_with_ties_and_padding():
    from scipy.stats import kendalltau

    generator = torch.Generator().manual_seed(3)
    scores = torch.randint(0, 4, (5, 3, 6), generator=generator).float()  # ties in plenty
    attention = torch.randint(0, 3, (5, 3, 6), generator=generator).float()
    src_mask = torch.arange(6) < torch.tensor([6, 5, 3, 2, 4]).unsqueeze(1)
    live = torch.rand(5, 3, generator=generator) < 0.8
    taus = [kendalltau(scores[n, t, src_mask[n]], attention[n, t, src_mask[n]]).statistic for n, t in live.nonzero().tolist()]
    expected = np.nanmean(taus)
    assert mean_tau(scores, attention, live, src_mask) == pytest.approx(expected, abs=1e-12)


def test_a_model_without_attention_has_no_attention_row_and_every_gradient_row():
    torch.manual_seed(0)
    model, _, _ = built_model(scorer="none")
    examples = build_task(ExperimentConfig(task="reverse", task_options={"min_length": 3, "max_length": 6})).generate(8, seed=1)
    table = explanation_table(model, examples, steps=8)
    assert table.loc["attention"].isna().all()
    assert table.loc[list(METHODS), ["within_one", "comprehensiveness", "sufficiency", "flip_top1"]].notna().all().all()
    assert table["tau_attention"].isna().all()
    metrics = explanation_metrics(table)
    assert len(metrics) == len(EXPLANATIONS) * len(MEASURES)  # less attention's tau, plus the count
    assert metrics["explain_examples"] == 8
    assert metrics["explain_integrated_gradients_flip_top1"] == table.loc["integrated_gradients", "flip_top1"]
