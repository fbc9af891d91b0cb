"""Erasure tests on a hand-made model whose answers are known, and on built models."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from attnlab.data.vocab import Vocab
from attnlab.evaluation.erasure import PROBES, erasure_metrics, random_positions, sample_indices
from attnlab.evaluation.metrics import evaluate
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import Seq2Seq, build_model, build_task
from attnlab.plugins import AttentionOutput, EncoderOutput, Example, masked_softmax

VOCAB = Vocab.from_alphabet("abcd")


class OneHotEncoder(nn.Module):
    """outputs: the one-hot source token [B, Ls, V]."""

    def __init__(self) -> None:
        super().__init__()
        self.unused = nn.Parameter(torch.zeros(1))

    def forward(self, src, src_mask):
        outputs = nn.functional.one_hot(src, len(VOCAB)).float()
        return EncoderOutput(outputs, outputs.sum(1))


class CopyDecoder(nn.Module):
    """Step t attends with the fixed weights ``table[t]`` (renormalised over the mask) and
    predicts the attended mixture of source tokens: its probabilities are the weights."""

    def __init__(self, table: list[list[float]], attends: bool = True) -> None:
        super().__init__()
        self.register_buffer("scores", torch.tensor(table).log())
        self.attends = attends

    def start(self, memory, src_mask):
        return (torch.zeros(src_mask.shape[0], dtype=torch.long),)

    def step(self, tokens, state, memory, src_mask):
        t = state[0]
        weights = masked_softmax(self.scores[t, : src_mask.shape[1]].unsqueeze(1), src_mask)  # [B, 1, Ls]
        context = weights @ memory.outputs  # [B, 1, V]
        logits = context[:, 0].clamp_min(1e-9).log()
        return logits, (t + 1,), AttentionOutput(context, weights if self.attends else None)


def copy_model(table: list[list[float]], attends: bool = True) -> Seq2Seq:
    return Seq2Seq(OneHotEncoder(), CopyDecoder(table, attends), VOCAB, VOCAB)


# Source "abcd"; step 0 (gold a) looks mostly at b, step 1 (gold c) mostly at d; step 2 is EOS.
TABLE = [[0.1, 0.6, 0.15, 0.15], [0.1, 0.1, 0.3, 0.5], [0.25, 0.25, 0.25, 0.25]]
EXAMPLE = Example("abcd", "bd", ((0,), (2,)))


def test_each_probe_removes_its_position_and_renormalises_the_rest():
    metrics = erasure_metrics(copy_model(TABLE), [EXAMPLE])
    # top: step 0 without b -> (0.1, 0.15, 0.15)/0.4 predicts c; step 1 without d predicts c
    assert metrics["erasure_flip_top"] == 1.0
    assert metrics["erasure_drop_top"] == pytest.approx((0.6 + 0.5) / 2, abs=1e-6)
    # gold: step 0 without a keeps b at 0.6/0.9; step 1 without c keeps d at 0.5/0.7
    assert metrics["erasure_flip_gold"] == 0.0
    assert metrics["erasure_drop_gold"] == pytest.approx(((0.6 - 0.6 / 0.9) + (0.5 - 0.5 / 0.7)) / 2, abs=1e-6)
    # random: step 0 draws c or d (0.15 each), step 1 draws a or b (0.1 each): same numbers either way
    assert metrics["erasure_flip_random"] == 0.0
    assert metrics["erasure_drop_random"] == pytest.approx(((0.6 - 0.6 / 0.85) + (0.5 - 0.5 / 0.9)) / 2, abs=1e-6)
    assert metrics["erasure_examples"] == 1.0


def test_only_aligned_steps_with_somewhere_left_to_look_are_probed():
    table = [[0.7, 0.3, 0.01, 0.01], [0.4, 0.6, 0.01, 0.01], [0.25] * 4]
    # a one-character source: erasing its only position leaves nothing, so no probe applies
    alone = erasure_metrics(copy_model(table), [Example("a", "a", ((0,),))])
    assert all(math.isnan(alone[f"erasure_flip_{p}"]) for p in PROBES)
    # no aligned step (empty gold, unknown alignment): nothing probed either
    unaligned = erasure_metrics(copy_model(table), [Example("ab", "ab", ((), ())), Example("ab", "ab", None)])
    assert all(math.isnan(unaligned[f"erasure_flip_{p}"]) for p in PROBES)
    assert unaligned["erasure_examples"] == 2.0
    # "ab": at both steps the top position is the gold one and the random probe takes the other
    two = erasure_metrics(copy_model(table), [Example("ab", "ab", ((0,), (1,)))])
    assert two["erasure_flip_top"] == 1.0 and two["erasure_flip_gold"] == 1.0 and two["erasure_flip_random"] == 0.0
    assert two["erasure_drop_random"] == pytest.approx(((0.7 - 1.0) + (0.6 - 1.0)) / 2, abs=1e-6)


def test_the_random_probe_never_picks_the_top_gold_or_padding():
    generator = torch.Generator().manual_seed(0)
    candidates = torch.tensor([[False, True, False, True], [False, False, False, False], [True, False, False, False]])
    for _ in range(50):
        chosen = random_positions(candidates, generator)
        assert (chosen & ~candidates).sum() == 0
        assert chosen.sum(-1).tolist() == [1, 0, 1]
    picks = {tuple(random_positions(candidates, generator)[0].tolist()) for _ in range(50)}
    assert len(picks) == 2  # both candidates get drawn


def test_a_scorer_that_does_not_attend_reports_none():
    metrics = erasure_metrics(copy_model(TABLE, attends=False), [EXAMPLE])
    assert set(metrics) == {"erasure_examples"} | {f"erasure_{k}_{p}" for k in ("flip", "drop") for p in PROBES}
    assert all(math.isnan(v) for v in metrics.values())


def test_the_sample_is_fixed_by_its_seed():
    assert sample_indices(5, size=10) == [0, 1, 2, 3, 4]
    drawn = sample_indices(1000, size=50, seed=3)
    assert drawn == sample_indices(1000, size=50, seed=3) and drawn == sorted(set(drawn)) and len(drawn) == 50
    assert drawn != sample_indices(1000, size=50, seed=4)


TINY = dict(task="reverse", task_options={"min_length": 3, "max_length": 6}, hidden_size=8, embedding_dim=4,
            train_size=16, validation_size=4, test_size=30, device="cpu")  # fmt: skip


@pytest.mark.parametrize("scorer,decoder", [("scaled_dot", "rnn"), ("multihead", "rnn"), ("additive", "transformer")])
def test_built_models_get_every_erasure_metric(scorer, decoder):
    config = ExperimentConfig(scorer=scorer, decoder=decoder, **TINY)
    task = build_task(config)
    model = build_model(config, task)
    examples = task.generate(30, seed=1)
    metrics = erasure_metrics(model, examples, size=20)
    assert metrics["erasure_examples"] == 20.0
    for probe in PROBES:
        assert 0.0 <= metrics[f"erasure_flip_{probe}"] <= 1.0
        assert -1.0 <= metrics[f"erasure_drop_{probe}"] <= 1.0
    assert metrics == erasure_metrics(model, examples, size=20)  # the same sample and random positions


def test_evaluate_reports_the_measures_and_none_reports_no_attention_metric():
    config = ExperimentConfig(scorer="none", **TINY)
    task = build_task(config)
    evaluation = evaluate(build_model(config, task), task.generate(10, seed=1))
    attention = [k for k in evaluation.metrics if k.startswith(("alignment", "erasure"))]
    assert len(attention) == 12 and all(math.isnan(evaluation.metrics[k]) for k in attention)
    assert evaluation.alignment_offsets is None
    config = ExperimentConfig(scorer="dot", **TINY)
    evaluation = evaluate(build_model(config, task), task.generate(10, seed=1))
    assert not any(math.isnan(evaluation.metrics[k]) for k in attention)
    assert evaluation.metrics["erasure_examples"] == 10.0
    assert evaluation.alignment_offsets["share"].sum() == pytest.approx(1.0)
