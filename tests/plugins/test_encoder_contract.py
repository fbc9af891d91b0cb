"""The encoder contract, checked on every installed encoder plugin."""

from __future__ import annotations

import pytest
import torch

from attnlab.plugins import EncoderOutput, create_plugin, list_plugins

VOCAB, EMB, HIDDEN = 12, 6, 8
LENGTHS = [7, 4, 1]


def make_batch():
    src = torch.randint(4, VOCAB, (len(LENGTHS), max(LENGTHS)))
    mask = torch.arange(max(LENGTHS))[None, :] < torch.tensor(LENGTHS)[:, None]
    return src.masked_fill(~mask, 0), mask


@pytest.fixture(params=list_plugins("encoders"))
def encoder(request):
    return create_plugin("encoders", request.param, VOCAB, EMB, HIDDEN).eval()


def test_shapes(encoder):
    src, mask = make_batch()
    out = encoder(src, mask)
    assert isinstance(out, EncoderOutput)
    assert out.outputs.shape == (len(LENGTHS), max(LENGTHS), encoder.output_dim)
    assert out.summary.shape == (len(LENGTHS), encoder.output_dim)


def test_gradients_reach_every_parameter(encoder):
    encoder.train()
    src, mask = make_batch()
    out = encoder(src, mask)
    (out.outputs[mask].pow(2).sum() + out.summary.pow(2).sum()).backward()
    for name, param in encoder.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_batch_invariance(encoder):
    src, mask = make_batch()
    batched = encoder(src, mask)
    for row, length in enumerate(LENGTHS):
        alone = encoder(src[row : row + 1, :length], mask[row : row + 1, :length])
        torch.testing.assert_close(alone.outputs[0], batched.outputs[row, :length], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(alone.summary[0], batched.summary[row], atol=1e-5, rtol=1e-4)
