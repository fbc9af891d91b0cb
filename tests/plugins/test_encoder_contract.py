"""The encoder contract, checked on every installed encoder plugin: attnlab.plugins.testing's check (what
plugin authors run) plus the built-ins' own properties."""

from __future__ import annotations

import pytest
import torch

from attnlab.plugins import PAD_ID, EncoderOutput, create_plugin, list_plugins, load_plugin
from attnlab.plugins.testing import check_encoder, check_plugin

VOCAB, EMB, HIDDEN = 12, 6, 8
LENGTHS = [7, 4, 1]


def make_batch():
    src = torch.randint(4, VOCAB, (len(LENGTHS), max(LENGTHS)))
    mask = torch.arange(max(LENGTHS))[None, :] < torch.tensor(LENGTHS)[:, None]
    return src.masked_fill(~mask, PAD_ID), mask


@pytest.fixture(params=list_plugins("encoders"))
def encoder(request):
    return create_plugin("encoders", request.param, VOCAB, EMB, HIDDEN).eval()


@pytest.mark.parametrize("name", list_plugins("encoders"))
def test_conformance_kit(name):
    check_encoder(load_plugin("encoders", name))
    assert check_plugin("encoders", name) is None  # what `attnlab plugins --check` runs


def test_conformance_kit_with_options():
    check_encoder(load_plugin("encoders", "lstm"), layers=2)
    check_encoder(load_plugin("encoders", "transformer"), layers=1, heads=2, max_length=5)


def test_pad_embeddings_stay_zero(encoder):
    embedding = getattr(encoder, "embedding", None)
    if embedding is not None:
        assert embedding.padding_idx == PAD_ID and not embedding.weight[PAD_ID].any()


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


@pytest.mark.parametrize("name", ["gru", "lstm", "bigru"])
def test_recurrent_dropout_acts_on_the_embeddings_and_between_layers(name):
    """One layer: dropout on the embeddings alone (it was refused when it acted between layers
    only); two layers: between them too."""
    one = create_plugin("encoders", name, 12, 8, 16, dropout=0.3)
    assert one.dropout.p == 0.3 and one.rnn.dropout == 0.0  # nn.GRU would warn that it does nothing
    assert create_plugin("encoders", name, 12, 8, 16, dropout=0.3, layers=2).rnn.dropout == 0.3
