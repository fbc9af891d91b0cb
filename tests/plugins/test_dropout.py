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

# (group, plugin, options, what to run): the recurrent encoders drop out on the embeddings and
# between layers.
CASES = [
    *[pytest.param("encoders", name, {"layers": 2}, "forward", id=f"{name}-encoder") for name in ("gru", "lstm", "bigru")],
    *[pytest.param("encoders", name, {}, "forward", id=f"{name}-encoder-one-layer") for name in ("gru", "lstm", "bigru")],
    pytest.param("encoders", "gru", {}, "unpadded", id="gru-encoder-one-layer-unpadded"),
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
        if how == "unpadded":  # one GRU layer over unpadded sources has a fused path of its own
            return module(SRC[:1], MASK[:1]).outputs
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


def test_the_config_dropout_reaches_the_built_in_encoder_and_decoder():
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task

    def rates(**fields) -> tuple[set[float], set[float]]:
        config = ExperimentConfig(hidden_size=8, embedding_dim=4, **fields)
        model = build_model(config, build_task(config))
        dropouts = lambda module: {m.p for m in module.modules() if isinstance(m, torch.nn.Dropout)}  # noqa: E731
        return dropouts(model.encoder), dropouts(model.decoder)

    assert rates() == ({0.0}, {0.0})  # unset: each plugin's own default
    assert rates(encoder="transformer", decoder="transformer") == ({0.1}, {0.1})
    assert rates(dropout=0.3) == ({0.3}, {0.3})
    assert rates(dropout=0.3, encoder="transformer", decoder="transformer") == ({0.3}, {0.3})
    assert rates(dropout=0.3, encoder_options={"dropout": 0.1}) == ({0.1}, {0.3})  # the plugin's own option wins
    assert rates(dropout=0.0, encoder="transformer", decoder="transformer") == ({0.0}, {0.0})


def test_the_config_dropout_is_refused_for_a_plugin_without_a_dropout_option(make_distribution):
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task
    from attnlab.plugins import PluginError

    make_distribution(
        "thirdparty-plain",
        {"attnlab.encoders": {"plain": "thirdparty_plain:PlainEncoder"}},
        {
            "thirdparty_plain.py": """
                from torch import nn

                from attnlab.plugins import Encoder, EncoderOutput

                class PlainEncoder(Encoder):
                    def __init__(self, vocab_size, embedding_dim, hidden_size, **options):
                        super().__init__(vocab_size, embedding_dim, hidden_size, **options)
                        self.embedding = nn.Embedding(vocab_size, hidden_size, padding_idx=0)

                    def forward(self, src, src_mask):
                        outputs = self.embedding(src)
                        keep = src_mask.unsqueeze(-1).float()
                        return EncoderOutput(outputs, (outputs * keep).sum(dim=1) / keep.sum(dim=1))
            """
        },
    )
    config = ExperimentConfig(encoder="plain", hidden_size=8, embedding_dim=4)
    build_model(config, build_task(config))  # a third party's plugin without the option builds as before
    with pytest.raises(
        PluginError, match=r"^dropout=0.2 is given to the encoder and the decoder, and encoder 'plain' has no dropout option"
    ):
        refused = config.model_copy(update={"dropout": 0.2})
        build_model(refused, build_task(refused))
