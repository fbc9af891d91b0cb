"""Decoders: the fast teacher-forced forward equals running step() position by position."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlab.plugins import EncoderOutput, create_plugin, list_plugins, load_plugin

VOCAB, EMB, HIDDEN, MEMORY = 15, 6, 8, 8
CASES = [(decoder, scorer) for decoder in list_plugins("decoders") for scorer in ("none", "scaled_dot", "additive", "multihead")]


def make_decoder(decoder: str, scorer: str, **options):
    scorer_cls = load_plugin("scorers", scorer)
    make_attention = lambda q, k: scorer_cls(q, k, **({"heads": 2} if scorer == "multihead" else {}))  # noqa: E731
    return create_plugin("decoders", decoder, VOCAB, EMB, HIDDEN, MEMORY, make_attention, **options).eval()


def make_memory():
    lengths = torch.tensor([5, 3])
    mask = torch.arange(5)[None, :] < lengths[:, None]
    return EncoderOutput(torch.randn(2, 5, MEMORY) * mask[..., None], torch.randn(2, MEMORY)), mask


@pytest.mark.parametrize("decoder,scorer", CASES)
def test_forward_equals_stepwise(decoder, scorer):
    dec = make_decoder(decoder, scorer)
    memory, mask = make_memory()
    tgt_in = torch.randint(3, VOCAB, (2, 6))
    fast = dec(tgt_in, memory, mask, need_weights=True)
    state = dec.start(memory, mask)
    logits, weights = [], []
    for t in range(tgt_in.shape[1]):
        step_logits, state, attn = dec.step(tgt_in[:, t], state, memory, mask)
        logits.append(step_logits)
        weights.append(attn.weights)
    torch.testing.assert_close(fast.logits, torch.stack(logits, dim=1), atol=1e-5, rtol=1e-4)
    if scorer == "none":
        assert fast.weights is None
    else:
        torch.testing.assert_close(fast.weights, torch.cat(weights, dim=1), atol=1e-5, rtol=1e-4)
        assert fast.weights.shape == (2, 6, 5)
        assert torch.all(fast.weights[1, :, 3:] == 0)
    if scorer == "multihead":
        assert fast.head_weights.shape == (2, 2, 6, 5)


@pytest.mark.parametrize("decoder", list_plugins("decoders"))
def test_need_weights_false_gives_the_same_logits(decoder):
    dec = make_decoder(decoder, "scaled_dot")
    memory, mask = make_memory()
    tgt_in = torch.randint(3, VOCAB, (2, 6))
    torch.testing.assert_close(dec(tgt_in, memory, mask, need_weights=False).logits, dec(tgt_in, memory, mask).logits, atol=1e-5, rtol=1e-4)


def test_lstm_cell_option_and_bad_cell():
    dec = make_decoder("rnn", "dot", cell="lstm")
    memory, mask = make_memory()
    assert len(dec.start(memory, mask)) == 2
    with pytest.raises(ValueError, match="unknown cell 'rnn'; allowed: gru, lstm"):
        make_decoder("rnn", "dot", cell="rnn")


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_hand_written_cell_step_equals_torch_cell(cell):
    """rnn's own step arithmetic gives nn.GRUCell's / nn.LSTMCell's outputs and gradients."""
    dec = make_decoder("rnn", "additive", cell=cell).double()
    x = torch.randn(3, EMB, dtype=torch.double, requires_grad=True)
    context = torch.randn(3, MEMORY, dtype=torch.double, requires_grad=True)
    state = tuple(torch.randn(3, HIDDEN, dtype=torch.double, requires_grad=True) for _ in range(2 if cell == "lstm" else 1))
    leaves = [x, context, *state, *dec.cell.parameters()]

    def run(step):
        for leaf in leaves:
            leaf.grad = None
        out = step()
        sum((o * torch.linspace(-1, 2, o.numel(), dtype=o.dtype).view_as(o)).sum() for o in out).backward()
        return [o.detach() for o in out], [leaf.grad.clone() for leaf in leaves]

    input_gates = lambda: F.linear(x, dec.cell.weight_ih[:, :EMB], dec.cell.bias_ih)  # noqa: E731
    ours = run(lambda: dec._cell(input_gates(), context, state, dec._context_weight()))
    if cell == "lstm":
        reference = run(lambda: dec.cell(torch.cat([x, context], -1), state))
    else:
        reference = run(lambda: (dec.cell(torch.cat([x, context], -1), state[0]),))
    for got, want in zip([*ours[0], *ours[1]], [*reference[0], *reference[1]]):
        torch.testing.assert_close(got, want)
