"""build_model probes every plugin of the model it builds: a broken one is a PluginError naming
it and its distribution, raised before anything trains; a good model is left exactly as built."""

from __future__ import annotations

import pytest
import torch

from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.plugins import PluginContractError, PluginError

TINY = {"embedding_dim": 4, "hidden_size": 8}

BROKEN = '''
import torch
from attnlab.plugins import Attention, EncoderOutput, Example
from attnlab.plugins.builtin.decoders import RNNDecoder
from attnlab.plugins.builtin.encoders import GRUEncoder
from attnlab.plugins.builtin.reverse_task import ReverseTask

class Transposed(Attention):
    def score(self, query, keys):
        return keys @ query.transpose(1, 2)

class Noisy(Attention):
    """A good scorer that draws from the global random generator even in eval mode."""

    def score(self, query, keys):
        return query @ keys.transpose(1, 2) + 0.0 * torch.rand(1)

class FlatSummary(GRUEncoder):
    def forward(self, src, src_mask):
        out = super().forward(src, src_mask)
        return EncoderOutput(out.outputs, out.summary[:, :1])

class StepAxis(RNNDecoder):
    def step(self, tokens, state, memory, src_mask):
        logits, state, attn = super().step(tokens, state, memory, src_mask)
        return logits.unsqueeze(1), state, attn

class OffByOne(ReverseTask):
    def sample(self, rng):
        source, target, alignment = super().sample(rng)
        return Example(source, target, tuple((i[0] + 1,) for i in alignment))
'''


@pytest.fixture
def broken(make_distribution):
    make_distribution(
        "thirdparty-broken-kit",
        {
            "attnlab.scorers": {"transposed": "thirdparty_broken_kit:Transposed", "noisy": "thirdparty_broken_kit:Noisy"},
            "attnlab.encoders": {"flat": "thirdparty_broken_kit:FlatSummary"},
            "attnlab.decoders": {"stepaxis": "thirdparty_broken_kit:StepAxis"},
            "attnlab.tasks": {"offbyone": "thirdparty_broken_kit:OffByOne"},
        },
        {"thirdparty_broken_kit.py": BROKEN},
    )


@pytest.mark.parametrize(
    "field, name, needles",
    [
        ("scorer", "transposed", ["score(query [3, 2, 8], keys [3, 5, 8])", "got [3, 5, 2] (transposed?)"]),
        ("encoder", "flat", ["summary", "expected a tensor of shape [B, output_dim] = [3, 8]", "got [3, 1]"]),
        ("decoder", "stepaxis", ["step(tokens [3], state, memory, src_mask) at step 0: logits", "got [3, 1, 14]"]),
        ("task", "offbyone", ["alignment entry", "indices in 0.."]),
    ],
)
def test_a_broken_plugin_is_named_when_the_model_is_built(broken, field, name, needles):
    config = ExperimentConfig(**{"task": "reverse", field: name, **TINY})
    task = build_task(config)
    with pytest.raises(PluginContractError) as info:
        build_model(config, task)
    message = str(info.value)
    assert message.startswith(f"{field} {name!r} (thirdparty_broken_kit:"), message
    assert "from thirdparty-broken-kit 1.0)" in message
    for needle in needles:
        assert needle in message, message
    assert isinstance(info.value, PluginError)  # the CLI's one-line error


@pytest.mark.parametrize(
    "plugins",
    [
        {"scorer": "scaled_dot", "encoder": "gru", "decoder": "rnn"},
        {"scorer": "multihead", "encoder": "transformer", "decoder": "transformer"},
        {"scorer": "none", "encoder": "bigru", "decoder": "rnn", "decoder_options": {"dropout": 0.3}},
        {"scorer": "noisy", "encoder": "gru", "decoder": "rnn"},
    ],
)
def test_the_probe_leaves_weights_modes_and_random_state_as_built(broken, plugins):
    config = ExperimentConfig(**plugins, **TINY, seed=5)
    task = build_task(config)
    plain = build_model(config, task, probe=False)
    after_plain = torch.rand(3)
    probed = build_model(config, task)
    after_probed = torch.rand(3)
    assert torch.equal(after_plain, after_probed)  # training draws the same numbers next
    assert plain.state_dict().keys() == probed.state_dict().keys()
    for key, value in plain.state_dict().items():
        assert torch.equal(value, probed.state_dict()[key]), key
    assert all(module.training for module in probed.modules())  # built in training mode, as before


def test_the_probe_runs_on_the_scorers_the_decoder_built(broken):
    """The transformer decoder builds one scorer per layer, with its own sizes: those are probed."""
    config = ExperimentConfig(scorer="transposed", decoder="transformer", **TINY)
    with pytest.raises(PluginContractError, match=r"scorer 'transposed'.*keys \[3, 5, 8\]"):
        build_model(config, build_task(config))
