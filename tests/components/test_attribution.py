"""Gradient attributions: a hand-made model whose output depends on one source position, the
completeness of integrated gradients, and every kind of built model (a scorer of the test's own
included) getting them without code of its own."""

from __future__ import annotations

import pytest
import torch
from explained_models import KEPT, CosineAttention, OnePositionEncoder, built_model, greedy_outputs
from torch import nn

from attnlab.data.vocab import EOS, PAD, SOS
from attnlab.evaluation.attribution import METHODS, attribute, check_method, token_embedding
from attnlab.plugins import PluginError, create_plugin


@pytest.mark.parametrize("method", METHODS)
def test_a_model_that_reads_one_source_position_is_explained_by_that_position(method):
    torch.manual_seed(0)
    model, src, mask = built_model(scorer="additive")
    model.encoder = OnePositionEncoder(model.encoder.vocab_size, 4, 8)
    outputs = greedy_outputs(model, src, mask)
    scores = attribute(model, src, mask, outputs, method)  # [B, T, Ls]
    assert (scores[..., :KEPT] == 0).all() and (scores[..., KEPT + 1 :] == 0).all()
    read, padded = scores[mask[:, KEPT], 0, KEPT], scores[~mask[:, KEPT], :, KEPT]
    assert len(read) and (read.abs() > 0).all()  # the first step of every row is explained
    assert len(padded) and (padded == 0).all()  # the model reads padding there, but padding explains nothing


def test_integrated_gradients_sum_to_the_output_minus_the_output_at_the_baseline():
    torch.manual_seed(0)
    model, src, mask = built_model(scorer="scaled_dot")
    model.eval()
    outputs = greedy_outputs(model, src, mask)
    scores = attribute(model, src, mask, outputs, "integrated_gradients", steps=64)
    tgt_in = torch.cat([torch.full((len(src), 1), SOS), outputs[:, :-1]], dim=1)  # the model's own prefix
    with torch.no_grad():
        here = model(src, mask, tgt_in).logits.log_softmax(-1).gather(2, outputs.unsqueeze(2)).squeeze(2)
        there = model(torch.full_like(src, PAD), mask, tgt_in).logits.log_softmax(-1).gather(2, outputs.unsqueeze(2)).squeeze(2)
    live = (torch.cumsum(outputs == EOS, dim=1) - (outputs == EOS).long()) == 0
    torch.testing.assert_close(scores.sum(-1)[live], (here - there)[live], atol=2e-3, rtol=2e-2)


@pytest.mark.parametrize(
    "overrides",
    [dict(scorer="none"), dict(scorer="multihead"), dict(encoder="transformer", decoder="transformer", scorer="scaled_dot")],
    ids=["none", "multihead", "transformer"],
)
def test_every_built_model_gets_attributions_zero_on_padding_and_after_eos(overrides):
    torch.manual_seed(0)
    model, src, mask = built_model(**overrides)
    outputs = greedy_outputs(model, src, mask)
    outputs[0, 2], outputs[0, 3:] = EOS, PAD  # a row that ended at its third step
    for method in METHODS:
        scores = attribute(model, src, mask, outputs, method)
        assert scores.shape == (*outputs.shape, src.shape[1]) and torch.isfinite(scores).all()
        assert (scores.masked_select(~mask.unsqueeze(1).expand_as(scores)) == 0).all()
        after_eos = (torch.cumsum(outputs == EOS, dim=1) - (outputs == EOS).long()) > 0
        assert (scores[after_eos] == 0).all()


def test_a_scorer_of_a_third_party_gets_attributions_without_code_of_its_own():
    torch.manual_seed(0)
    model, src, mask = built_model()
    key_dim = model.encoder.output_dim
    model.decoder = create_plugin("decoders", "rnn", len(model.tgt_vocab), 4, 8, key_dim, CosineAttention)
    outputs = greedy_outputs(model, src, mask)
    scores = attribute(model, src, mask, outputs, "saliency")
    assert (scores[:, 0].sum(-1) > 0).all()


def test_bad_choices_name_the_value_and_what_is_allowed():
    with pytest.raises(ValueError, match="'lime'.*saliency, input_x_gradient, integrated_gradients"):
        check_method("lime")
    with pytest.raises(ValueError, match="'zeros'.*pad, unk"):
        check_method("integrated_gradients", baseline="zeros")
    with pytest.raises(ValueError, match="steps 1"):
        check_method("integrated_gradients", steps=1)


def test_an_encoder_without_one_token_embedding_is_named():
    model, _, _ = built_model()
    model.encoder.extra = nn.Embedding(model.encoder.vocab_size, 4)  # a second table of vocab_size rows, no padding_idx
    assert token_embedding(model) is not model.encoder.extra
    model.encoder.extra.padding_idx = PAD
    with pytest.raises(PluginError, match="has 2 nn.Embedding modules of vocab_size .* rows, 2 of them with padding_idx 0"):
        token_embedding(model)
    model.encoder.extra.padding_idx = model.encoder.embedding.padding_idx = None
    with pytest.raises(PluginError, match="has 2 nn.Embedding modules of vocab_size .* rows, 0 of them with padding_idx 0"):
        token_embedding(model)


def test_saliency_and_input_x_gradient_are_the_gradient_at_the_token_embeddings_reduced():
    """Checked against the gradient taken by hand: of the chosen token's log-probability at each
    step, teacher-forced on the model's own prefix, at the encoder's token embedding."""
    torch.manual_seed(0)
    model, src, mask = built_model(scorer="additive")
    model.eval()
    outputs = greedy_outputs(model, src, mask)
    tgt_in = torch.cat([torch.full((len(src), 1), SOS), outputs[:, :-1]], dim=1)
    kept: list[torch.Tensor] = []
    hook = token_embedding(model).register_forward_hook(lambda module, args, out: kept.append(out.retain_grad() or out))
    step = 1
    model(src, mask, tgt_in).logits[:, step].log_softmax(-1).gather(1, outputs[:, step : step + 1]).sum().backward()
    hook.remove()
    embedded = kept[0]  # [B, Ls, E]
    saliency = attribute(model, src, mask, outputs, "saliency")[:, step]
    input_x_gradient = attribute(model, src, mask, outputs, "input_x_gradient")[:, step]
    live = (outputs[:, :step] != EOS).all(1)
    torch.testing.assert_close(saliency[live], (embedded.grad.norm(dim=-1) * mask)[live])
    torch.testing.assert_close(input_x_gradient[live], ((embedded * embedded.grad).sum(-1) * mask)[live].detach())
