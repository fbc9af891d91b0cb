"""Every built-in dropout option acts while training and is switched off in eval mode."""

from __future__ import annotations

import inspect

import pytest
import torch

from attnlab.plugins import EncoderOutput, create_plugin, list_plugins, load_plugin

VOCAB, EMB, HIDDEN = 15, 6, 8
MASK = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
SRC = torch.randint(3, VOCAB, (2, 5), generator=torch.Generator().manual_seed(1)) * MASK
TGT_IN = torch.randint(3, VOCAB, (2, 6), generator=torch.Generator().manual_seed(2))
_RNG = torch.Generator().manual_seed(3)
MEMORY = EncoderOutput(torch.randn(2, 5, HIDDEN, generator=_RNG) * MASK[..., None], torch.randn(2, HIDDEN, generator=_RNG))
QUERY = torch.randn(2, 4, HIDDEN, generator=_RNG)

# (group, plugin, options, what to run): the recurrent encoders drop out between layers only.
CASES = [
    *[pytest.param("encoders", name, {"layers": 2}, "forward", id=f"{name}-encoder") for name in ("gru", "lstm", "bigru")],
    pytest.param("encoders", "transformer", {}, "forward", id="transformer-encoder"),
    pytest.param("decoders", "rnn", {"cell": "gru"}, "forward", id="rnn-gru-decoder"),
    pytest.param("decoders", "rnn", {"cell": "lstm"}, "forward", id="rnn-lstm-decoder"),
    pytest.param("decoders", "rnn", {"cell": "gru"}, "step", id="rnn-gru-decoder-step"),
    pytest.param("decoders", "transformer", {}, "forward", id="transformer-decoder"),
    pytest.param("scorers", "multihead", {"heads": 2}, "forward", id="multihead-scorer"),
    pytest.param("scorers", "multihead", {"heads": 2}, "context_only", id="multihead-scorer-context-only"),
]


def build(group: str, name: str, options: dict, dropout: float):
    torch.manual_seed(0)  # same weights whatever the dropout
    if group == "encoders":
        return create_plugin(group, name, VOCAB, EMB, HIDDEN, dropout=dropout, **options)
    if group == "decoders":
        scaled_dot = load_plugin("scorers", "scaled_dot")
        return create_plugin(group, name, VOCAB, EMB, HIDDEN, HIDDEN, scaled_dot, dropout=dropout, **options)
    return create_plugin(group, name, HIDDEN, HIDDEN, dropout=dropout, **options)


def output(module, group: str, how: str) -> torch.Tensor:
    if group == "encoders":
        return module(SRC, MASK).outputs
    if group == "decoders":
        if how == "step":
            return module.step(TGT_IN[:, 0], module.start(MEMORY, MASK), MEMORY, MASK)[0]
        return module(TGT_IN, MEMORY, MASK).logits
    if how == "context_only":
        return module.context_only(QUERY, MEMORY.outputs, MEMORY.outputs, MASK)
    return module(QUERY, MEMORY.outputs, MEMORY.outputs, MASK).context


def test_the_cases_cover_every_built_in_dropout_option():
    with_dropout = {
        (group, name)
        for group in ("encoders", "decoders", "scorers")
        for name in list_plugins(group)
        if load_plugin(group, name).__module__.startswith("attnlab.")
        and "dropout" in inspect.signature(load_plugin(group, name).__init__).parameters
    }
    assert with_dropout == {tuple(case.values[:2]) for case in CASES}


@pytest.mark.parametrize("group,name,options,how", CASES)
def test_dropout_changes_training_outputs_and_not_eval_ones(group, name, options, how):
    plain, dropped = build(group, name, options, 0.0), build(group, name, options, 0.5)
    with torch.no_grad():
        reference = output(plain.eval(), group, how)
        assert torch.equal(output(dropped.eval(), group, how), output(dropped, group, how))  # eval: deterministic
        torch.testing.assert_close(output(dropped, group, how), reference)  # and dropout is off
        torch.testing.assert_close(output(plain.train(), group, how), reference, atol=1e-5, rtol=1e-4)
        dropped.train()
        first, second = output(dropped, group, how), output(dropped, group, how)
    assert not torch.allclose(first, reference, atol=1e-3)
    assert not torch.allclose(first, second, atol=1e-3)  # a fresh mask every call
