"""The scorer contract, checked on every installed scorer plugin: attnlab.plugins.testing's check (what
plugin authors run) plus the built-ins' own properties."""

from __future__ import annotations

import pytest
import torch

from attnlab.plugins import AttentionOutput, create_plugin, list_plugins, load_plugin
from attnlab.plugins.testing import check_plugin, check_scorer

B, LQ, LK, D = 3, 2, 5, 8
LENGTHS = [5, 3, 1]


def make_inputs():
    query = torch.randn(B, LQ, D)
    keys = torch.randn(B, LK, D)
    mask = torch.arange(LK)[None, :] < torch.tensor(LENGTHS)[:, None]  # [B, LK]
    return query, keys, mask


@pytest.fixture(params=list_plugins("scorers"))
def scorer(request):
    module = create_plugin("scorers", request.param, D, D)
    return module.eval()


@pytest.mark.parametrize("name", list_plugins("scorers"))
def test_conformance_kit(name):
    check_scorer(load_plugin("scorers", name))
    assert check_plugin("scorers", name) is None  # what `attnlab plugins --check` runs


def test_conformance_kit_with_options():
    check_scorer(load_plugin("scorers", "multihead"), heads=2, model_dim=6, dropout=0.1)
    check_scorer(load_plugin("scorers", "additive"), attention_dim=3)


def test_shapes_and_weights(scorer):
    query, keys, mask = make_inputs()
    out = scorer(query, keys, keys, mask)
    assert isinstance(out, AttentionOutput)
    assert out.context.shape == (B, LQ, scorer.output_dim)
    if not scorer.attends:
        assert out.weights is None and torch.all(out.context == 0)
        return
    assert out.weights.shape == (B, LQ, LK)
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(B, LQ))
    assert torch.all(out.weights.masked_select(~mask[:, None, :]) == 0.0)  # exactly zero
    if out.head_weights is not None:
        heads = out.head_weights
        assert heads.shape[0] == B and heads.shape[2:] == (LQ, LK)
        torch.testing.assert_close(heads.mean(dim=1), out.weights)
        assert torch.all(heads.masked_select(~mask[:, None, None, :]) == 0.0)


def test_gradients_reach_every_parameter(scorer):
    scorer.train()
    if not scorer.attends:  # the no-attention baseline has nothing to learn
        assert list(scorer.parameters()) == []
        return
    query, keys, mask = make_inputs()
    query.requires_grad_(True)
    out = scorer(query, keys, keys, mask)
    (out.context.pow(2).sum() + out.weights.pow(2).sum()).backward()
    for name, param in scorer.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name
    assert query.grad is not None and query.grad.abs().sum() > 0


def test_batch_invariance(scorer):
    query, keys, mask = make_inputs()
    batched = scorer(query, keys, keys, mask)
    for row, length in enumerate(LENGTHS):
        alone = scorer(query[row : row + 1], keys[row : row + 1, :length], keys[row : row + 1, :length])
        torch.testing.assert_close(alone.context[0], batched.context[row], atol=1e-5, rtol=1e-5)
        if batched.weights is not None:
            torch.testing.assert_close(alone.weights[0], batched.weights[row, :, :length], atol=1e-6, rtol=1e-5)


def test_context_only_matches_forward(scorer):
    query, keys, mask = make_inputs()
    torch.testing.assert_close(scorer.context_only(query, keys, keys, mask), scorer(query, keys, keys, mask).context, atol=1e-6, rtol=1e-5)


def test_key_projections_are_reused_across_steps_but_not_after_updates(scorer):
    query, keys, mask = make_inputs()
    first = scorer(query, keys, keys, mask)
    torch.testing.assert_close(scorer(query, keys, keys, mask).context, first.context)
    with torch.no_grad():
        for param in scorer.parameters():
            param.add_(0.5)
    if list(scorer.parameters()):
        updated = scorer(query, keys, keys, mask).context
        fresh = __import__("copy").deepcopy(scorer)(query, keys.clone(), keys.clone(), mask).context
        torch.testing.assert_close(updated, fresh)
        assert not torch.allclose(updated, first.context)
