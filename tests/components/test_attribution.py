"""Gradient attributions: a hand-made model whose outputs depend on one source position, the
completeness of integrated gradients, every kind of built model, a third party's scorer and an
encoder the methods cannot read."""

from __future__ import annotations

import pytest
import torch
from explain_models import VOCAB, one_position_model
from plugin_sources import documented_cosine
from torch import nn

from attnlab.data.vocab import pad_batch
from attnlab.evaluation.attribution import (
    GRADIENT_METHODS,
    AttributionOptions,
    _step_probabilities,
    gradient_scores,
    step_attributions,
)
from attnlab.evaluation.explanations import ExplainOptions, explain_model
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import Seq2Seq, build_model, build_task
from attnlab.model.decode import OwnOutputs, own_outputs
from attnlab.plugins import PAD_ID, UNK_ID, EncoderOutput, Example, PluginError


def outputs_of(model: Seq2Seq, sources: list[str], max_length: int | None = None) -> OwnOutputs:
    src, mask = pad_batch([model.src_vocab.encode(source) for source in sources])
    return own_outputs(model, src, mask, max_length)


@pytest.mark.parametrize("method", GRADIENT_METHODS)
@pytest.mark.parametrize("position", [0, 2, 3])
def test_every_gradient_method_finds_the_one_position_the_output_depends_on(method, position):
    model = one_position_model(position, shown=1)
    outputs = outputs_of(model, ["abcd", "dcba", "bbad", "dadc"])
    scores = gradient_scores(model, method, outputs, AttributionOptions(steps=8))
    characters = scores[:, :3]  # the 3 tokens before EOS
    assert (characters.argmax(dim=-1) == position).all()
    others = torch.ones(4, dtype=torch.bool).index_fill(0, torch.tensor([position]), False)
    assert (characters[..., others] == 0).all()
    assert (characters[..., position] > 0).all()


def tiny(**fields) -> ExperimentConfig:
    return ExperimentConfig(hidden_size=8, embedding_dim=8, **fields)


def test_integrated_gradients_add_up_to_the_probability_over_the_baseline():
    config = tiny(encoder="bigru", scorer="additive")
    model = build_model(config, build_task(config)).eval()
    outputs = outputs_of(model, ["25-12-2023", "01-02-2003", "14-07-2015"])
    for baseline in ("pad", "unk"):
        for step in (0, 4):
            signed = step_attributions(model, "integrated_gradients", outputs, step, AttributionOptions(steps=32, baseline=baseline))
            prefix = outputs.tgt_in[:, : step + 1]
            start_tokens = torch.where(outputs.src_mask, PAD_ID if baseline == "pad" else UNK_ID, PAD_ID)
            with torch.no_grad():
                start = _step_probabilities(model, start_tokens, outputs.src_mask, prefix)
                end = _step_probabilities(model, outputs.src, outputs.src_mask, prefix)
            token = outputs.tokens[:, step : step + 1]
            difference = (end.gather(1, token) - start.gather(1, token)).squeeze(1)
            assert signed.sum(dim=(1, 2)) == pytest.approx(difference.tolist(), abs=1e-4)
            assert difference.abs().max() > 1e-3  # the check is not 0 == 0


# Every kind of model the plugins build: recurrent and transformer, with and without attention;
# the unidirectional GRU on unpadded dates takes its fused path unless the embedding is watched.
KINDS = [
    ("date", "gru", "rnn", "none"),
    ("date", "gru", "rnn", "scaled_dot"),
    ("reverse", "bigru", "rnn", "multihead"),
    ("reverse", "lstm", "rnn", "general"),
    ("reverse", "transformer", "transformer", "multihead"),
]


@pytest.mark.parametrize(("task", "encoder", "decoder", "scorer"), KINDS)
def test_every_model_the_plugins_build_gets_scores(task, encoder, decoder, scorer):
    config = tiny(task=task, encoder=encoder, decoder=decoder, scorer=scorer, scorer_options={"heads": 2} if scorer == "multihead" else {},
                  encoder_options={"heads": 2, "layers": 1} if encoder == "transformer" else {},
                  decoder_options={"heads": 2, "layers": 1} if decoder == "transformer" else {})  # fmt: skip
    model = build_model(config, build_task(config))
    sources = ["25-12-2023", "01-02-2003"] if task == "date" else ["123", "98765"]
    outputs = outputs_of(model, sources, max_length=5)
    for method in GRADIENT_METHODS:
        scores = gradient_scores(model, method, outputs, AttributionOptions(steps=4))
        assert scores.shape == (2, outputs.tokens.shape[1], outputs.src.shape[1])
        assert torch.isfinite(scores).all() and (scores >= 0).all()
        assert (scores[~outputs.src_mask.unsqueeze(1).expand_as(scores)] == 0).all()  # padding
        assert (scores.sum(dim=-1) > 0).all()  # every output token is attributed somewhere
    assert model.training  # left in its mode


def test_a_third_party_scorer_gets_attributions_with_no_code_of_its_own(make_distribution):
    make_distribution(
        "thirdparty-cosine",
        {"attnlab.scorers": {"cosine": "thirdparty_cosine:CosineAttention"}},
        {"thirdparty_cosine.py": documented_cosine()},
    )
    # short sources: an untrained model's outputs run to the step limit, 2 x length + 16
    config = tiny(scorer="cosine", task="reverse", task_options={"min_length": 2, "max_length": 3})
    task = build_task(config)
    model = build_model(config, task)
    examples = task.generate(4, seed=1)
    explanation = explain_model(model, examples, ExplainOptions(attribution=AttributionOptions(steps=2)))
    assert explanation.note is None
    assert explanation.table["method"].tolist() == ["attention", *GRADIENT_METHODS, "random"]
    gradient_rows = explanation.table.set_index("method").loc[list(GRADIENT_METHODS)]  # untrained: no output agrees with a target
    assert gradient_rows[["comprehensiveness", "sufficiency", "flip_top", "kendall_tau"]].notna().all().all()
    assert (gradient_rows["probed_steps"] > 0).all()


class TwoEmbeddingEncoder(nn.Module):
    """An encoder with two token embeddings of the source's size: which one is the source's is unsaid."""

    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = nn.Embedding(len(VOCAB), 4), nn.Embedding(len(VOCAB), 4)

    def forward(self, src, src_mask):
        outputs = self.first(src) + self.second(src)
        return EncoderOutput(outputs, outputs.sum(1))


def test_an_encoder_without_one_token_embedding_is_named_and_leaves_attention_measured():
    model = one_position_model(1, shown=1)
    model.encoder = TwoEmbeddingEncoder()
    with pytest.raises(PluginError, match="encoder TwoEmbeddingEncoder has 2 nn.Embedding modules of 8 rows"):
        gradient_scores(model, "saliency", outputs_of(model, ["abcd"]))
    explanation = explain_model(model, [Example("abcd", "aaa", None)])
    assert explanation.table["method"].tolist() == ["attention", "random"]
    assert explanation.note is not None and "TwoEmbeddingEncoder" in explanation.note
