"""Predictions on raw strings, their input checks, and model bundles on disk."""

from __future__ import annotations

import pytest

from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.model.bundle import load_bundle, save_bundle
from attnlab.model.predict import predict

TINY = dict(hidden_size=16, embedding_dim=8)


@pytest.fixture(scope="module")
def date_model():
    config = ExperimentConfig(**TINY)
    task = build_task(config)
    return config, task, build_model(config, task)


def test_prediction_carries_tokens_and_weights(date_model):
    _, task, model = date_model
    (pred,) = predict(model, task, ["25-12-2023"], max_length=12)
    assert pred.source_tokens == list("25-12-2023")
    assert len(pred.weights) == len(pred.output_tokens) <= 12
    assert all(len(row) == 10 and abs(sum(row) - 1) < 1e-5 for row in pred.weights)
    assert pred.output == "".join(t for t in pred.output_tokens if t != "<eos>")


def test_multihead_prediction_has_per_head_weights():
    config = ExperimentConfig(scorer="multihead", scorer_options={"heads": 2}, **TINY)
    task = build_task(config)
    (pred,) = predict(build_model(config, task), task, ["01-02-2003"], max_length=5)
    assert len(pred.head_weights) == 2 and len(pred.head_weights[0]) == len(pred.output_tokens)


@pytest.mark.parametrize(
    "texts,message",
    [
        ([], "no input given"),
        ([""], "the source is empty"),
        (["25/12/2023"], r"'25/12/2023' has character\(s\) '/' outside this task's alphabet '0123456789-'"),
    ],
)
def test_bad_inputs_are_named(date_model, texts, message):
    _, task, model = date_model
    with pytest.raises(ValueError, match=message):
        predict(model, task, texts)


def test_source_longer_than_the_model_allows():
    config = ExperimentConfig(task="reverse", encoder="transformer", encoder_options={"max_length": 8}, **TINY)
    task = build_task(config)
    with pytest.raises(ValueError, match="'123456789' has 9 characters; this model accepts at most 8"):
        predict(build_model(config, task), task, ["123456789"])


def test_bundle_round_trip(tmp_path, date_model):
    config, task, model = date_model
    save_bundle(tmp_path / "model", config, model)
    loaded_config, loaded_task, loaded = load_bundle(tmp_path / "model")
    assert loaded_config == config and type(loaded_task) is type(task)
    texts = ["25-12-2023", "01-01-2000"]
    assert [p.output for p in predict(loaded, loaded_task, texts)] == [p.output for p in predict(model, task, texts)]


def test_bundle_keeps_the_vocabularies_it_was_trained_with(tmp_path):
    from attnlab.data.vocab import Vocab

    config = ExperimentConfig(**TINY)
    task = build_task(config)
    vocabs = (Vocab.from_alphabet("0123456789-"), Vocab.from_alphabet("0123456789年月日#"))  # one extra target char
    model = build_model(config, task, vocabs)
    save_bundle(tmp_path / "model", config, model)
    _, _, loaded = load_bundle(tmp_path / "model")
    assert (loaded.src_vocab, loaded.tgt_vocab) == vocabs
    assert len(loaded.tgt_vocab) == len(Vocab.from_alphabet(task.target_alphabet)) + 1
