"""Seq2Seq.forward: what teacher_forcing makes the decoder read at each step."""

from __future__ import annotations

import pytest
import torch

from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task

B, LT = 16, 6


@pytest.fixture
def model():
    config = ExperimentConfig(hidden_size=7, embedding_dim=5)
    return build_model(config, build_task(config)).eval()


def fed_tokens(model, teacher_forcing: float, tgt_in):
    """Run forward; returns the logits [B, Lt, V] and the tokens each decoder step read [B, Lt]."""
    src = torch.randint(3, len(model.src_vocab), (B, 10), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(B, 10, dtype=torch.bool)
    fed, step = [], model.decoder.step

    def spy(tokens, *args):
        fed.append(tokens.clone())
        return step(tokens, *args)

    model.decoder.step = spy
    with torch.no_grad():
        logits = model(src, mask, tgt_in, teacher_forcing=teacher_forcing).logits
    return logits, torch.stack(fed, dim=1) if fed else None


def test_teacher_forcing_zero_feeds_the_models_own_predictions(model):
    tgt_in = torch.randint(3, len(model.tgt_vocab), (B, LT))
    logits, fed = fed_tokens(model, 0.0, tgt_in)
    assert torch.equal(fed[:, 0], tgt_in[:, 0])
    assert torch.equal(fed[:, 1:], logits[:, :-1].argmax(-1))
    assert not torch.equal(fed[:, 1:], tgt_in[:, 1:])


def test_teacher_forcing_one_feeds_the_gold_tokens(model):
    tgt_in = torch.randint(3, len(model.tgt_vocab), (B, LT))
    logits, _ = fed_tokens(model, 1.0, tgt_in)
    # almost 1: the step-by-step path, still gold at every step
    stepwise, fed = fed_tokens(model, 1.0 - 1e-9, tgt_in)
    assert torch.equal(fed, tgt_in)
    torch.testing.assert_close(logits, stepwise, atol=1e-5, rtol=1e-4)
    assert not torch.allclose(logits, fed_tokens(model, 0.0, tgt_in)[0])


def test_teacher_forcing_half_mixes_gold_and_predicted_tokens(model):
    tgt_in = torch.randint(3, len(model.tgt_vocab), (B, LT))
    logits, fed = fed_tokens(model, 0.5, tgt_in)
    gold, predicted = fed[:, 1:] == tgt_in[:, 1:], fed[:, 1:] == logits[:, :-1].argmax(-1)
    assert torch.all(gold | predicted)
    assert 0.3 < (gold & ~predicted).sum() / (gold ^ predicted).sum() < 0.7
