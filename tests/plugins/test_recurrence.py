"""The fused GRU loops give nn.GRU's and the step-by-step decoder's numbers, gradients included."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F

from attnlab.plugins import EncoderOutput, create_plugin, load_plugin
from attnlab.plugins import _recurrence as recurrence
from attnlab.plugins._recurrence import GRUScan
from attnlab.plugins.builtin.scorers import AdditiveAttention, DotAttention, ScaledDotAttention

VOCAB, EMB, HIDDEN = 15, 6, 8


def grads(tensors) -> list[torch.Tensor]:
    return [t.grad.clone() for t in tensors]


def test_gru_scan_equals_nn_gru():
    torch.manual_seed(0)
    gru = torch.nn.GRU(EMB, HIDDEN).double()
    embedding = torch.randn(VOCAB, EMB, dtype=torch.double, requires_grad=True)
    tokens = torch.randint(0, VOCAB, (7, 3))  # [T, B]
    h0 = torch.randn(3, HIDDEN, dtype=torch.double, requires_grad=True)
    params = [embedding, h0, *gru.parameters()]

    expected, _ = gru(embedding[tokens], h0.unsqueeze(0))
    expected.pow(2).sum().backward()
    expected_grads = grads(params)
    for p in params:
        p.grad = None

    table = F.linear(embedding, gru.weight_ih_l0, gru.bias_ih_l0)  # [V, 3H]
    states = GRUScan.apply(tokens, table, h0, gru.weight_hh_l0, gru.bias_hh_l0)
    states.pow(2).sum().backward()
    torch.testing.assert_close(states, expected)
    for got, want in zip(grads(params), expected_grads):
        torch.testing.assert_close(got, want)


def make_decoder(scorer: str):
    scorer_cls = load_plugin("scorers", scorer)
    return create_plugin("decoders", "rnn", VOCAB, EMB, HIDDEN, HIDDEN, scorer_cls).double()


def decoder_pass(dec, memory: EncoderOutput, mask, tgt_in):
    """Logits, weights and the gradients of every parameter and of the memory."""
    for p in [*dec.parameters(), memory.outputs, memory.summary]:
        p.grad = None
    out = dec(tgt_in, memory, mask, need_weights=True)
    # The loss reaches the weights too, so their backward path is checked as well.
    loss = F.cross_entropy(out.logits.transpose(1, 2), tgt_in) + out.weights.pow(2).sum()
    loss.backward()
    return out.logits, out.weights, grads([*dec.parameters(), memory.outputs, memory.summary])


@pytest.mark.parametrize("scorer", ["dot", "scaled_dot"])
@pytest.mark.parametrize("padded", [False, True])
def test_fused_decoder_equals_the_step_by_step_one(scorer, padded, monkeypatch):
    torch.manual_seed(0)
    dec = make_decoder(scorer)
    lengths = torch.tensor([5, 3] if padded else [5, 5])
    mask = torch.arange(5)[None, :] < lengths[:, None]
    outputs = (torch.randn(2, 5, HIDDEN, dtype=torch.double) * mask[..., None]).requires_grad_()
    memory = EncoderOutput(outputs, torch.randn(2, HIDDEN, dtype=torch.double, requires_grad=True))
    tgt_in = torch.randint(3, VOCAB, (2, 6))

    assert dec.attention.dot_scale() is not None
    fused = decoder_pass(dec, memory, mask, tgt_in)
    monkeypatch.setattr(type(dec.attention), "dot_scale", lambda self: None)
    stepwise = decoder_pass(dec, memory, mask, tgt_in)

    torch.testing.assert_close(fused[0], stepwise[0])
    torch.testing.assert_close(fused[1], stepwise[1])
    if padded:
        assert torch.all(fused[1][1, :, 3:] == 0)
    for got, want in zip(fused[2], stepwise[2]):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("padded", [False, True])
def test_fused_decoding_step_equals_the_generic_one(padded, monkeypatch):
    torch.manual_seed(0)
    dec = make_decoder("scaled_dot").eval()
    lengths = torch.tensor([5, 3] if padded else [5, 5])
    mask = torch.arange(5)[None, :] < lengths[:, None]
    memory = EncoderOutput(torch.randn(2, 5, HIDDEN, dtype=torch.double) * mask[..., None], torch.randn(2, HIDDEN, dtype=torch.double))
    tokens = torch.randint(3, VOCAB, (2,))

    def step():
        with torch.no_grad():
            logits, state, attn = dec.step(tokens, dec.start(memory, mask), memory, mask)
        return logits, state[0], attn.context, attn.weights

    fused = step()
    monkeypatch.setattr(type(dec.attention), "dot_scale", lambda self: None)
    for got, want in zip(fused, step()):
        torch.testing.assert_close(got, want)
    if padded:
        assert torch.all(fused[3][1, :, 3:] == 0)


def test_only_plain_dot_product_scorers_take_the_fused_path():
    class Cosine(ScaledDotAttention):
        def score(self, query, keys):
            return F.normalize(query, dim=-1) @ F.normalize(keys, dim=-1).transpose(-2, -1)

    assert DotAttention(8, 8).dot_scale() == 1.0
    assert ScaledDotAttention(16, 16).dot_scale() == 0.25
    assert Cosine(8, 8).dot_scale() is None
    assert AdditiveAttention(8, 8).dot_scale() is None


def test_compiled_is_a_per_thread_choice():
    def loop(x):
        return x

    def eager() -> bool:
        return recurrence.loop(loop) is loop

    seen = []
    with recurrence.compiled():
        thread = threading.Thread(target=lambda: seen.append(eager()))
        thread.start()
        thread.join()
        seen.append(eager())
    assert seen == [True, False]  # another thread stays eager while this one compiles
    assert eager()  # and this one is eager again after the block


@pytest.mark.slow
def test_compiled_loops_equal_the_eager_ones():
    torch.manual_seed(0)
    encoder = create_plugin("encoders", "gru", VOCAB, EMB, HIDDEN)
    dec = create_plugin("decoders", "rnn", VOCAB, EMB, HIDDEN, HIDDEN, ScaledDotAttention)
    src, tgt_in = torch.randint(3, VOCAB, (4, 5)), torch.randint(3, VOCAB, (4, 6))
    mask = torch.ones(4, 5, dtype=torch.bool)
    params = [*encoder.parameters(), *dec.parameters()]

    def run():
        for p in params:
            p.grad = None
        out = dec(tgt_in, encoder(src, mask), mask, need_weights=True)
        F.cross_entropy(out.logits.transpose(1, 2), tgt_in).backward()
        return out.logits, out.weights, grads(params)

    def decode_step():
        with torch.no_grad():
            memory = encoder(src, mask)
            logits, state, attn = dec.step(tgt_in[:, 0], dec.start(memory, mask), memory, mask)
        return [logits, state[0], attn.weights]

    eager, eager_step = run(), decode_step()
    with recurrence.compiled():
        compiled, compiled_step = run(), decode_step()
    for got, want in zip([compiled[0], compiled[1], *compiled[2], *compiled_step], [eager[0], eager[1], *eager[2], *eager_step]):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


def test_lengths_past_the_recompile_limit_run_eagerly_instead_of_failing(monkeypatch):
    """Data of varying lengths meets more shapes than torch.compile recompiles for (8 by default;
    1 here): the loops of the further lengths run eagerly, with the eager results, instead of
    stopping training with a recompile-limit error. (aot_eager: the test is about the limit.)"""
    import functools

    monkeypatch.setattr(recurrence, "_compiled", {})
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="aot_eager"))
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 1)
    torch._dynamo.reset()
    torch.manual_seed(0)
    encoder = create_plugin("encoders", "gru", VOCAB, EMB, HIDDEN)
    dec = create_plugin("decoders", "rnn", VOCAB, EMB, HIDDEN, HIDDEN, ScaledDotAttention)
    for length in (5, 7, 9):
        src, tgt_in = torch.randint(3, VOCAB, (2, length)), torch.randint(3, VOCAB, (2, length + 1))
        mask = torch.ones(2, length, dtype=torch.bool)
        eager = dec(tgt_in, encoder(src, mask), mask).logits
        with recurrence.compiled():
            torch.testing.assert_close(dec(tgt_in, encoder(src, mask), mask).logits, eager)
    assert recurrence._compiled  # the compiled loop was made and asked each time
    torch._dynamo.reset()
