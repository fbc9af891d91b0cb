"""Training: the date task is learned, every plugin trains, runs are deterministic and resumable."""

from __future__ import annotations

import functools

import pytest
import torch

from attnlab.data.splits import encode_examples
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model
from attnlab.plugins import _recurrence as recurrence
from attnlab.plugins import list_plugins
from attnlab.training.experiment import prepare_data, run_experiment, train_model
from attnlab.training.loop import TrainingDiverged, train

TINY = dict(hidden_size=16, embedding_dim=8, train_size=128, validation_size=32, test_size=32, batch_size=32, epochs=1)


@pytest.mark.slow
def test_date_task_reaches_99_percent_on_unseen_dates():
    result = run_experiment(ExperimentConfig(epochs=3))  # the defaults, capped at 3 epochs
    assert result.evaluation.metrics["exact_match"] >= 0.99
    seen = {ex.target for ex in result.splits.train}
    assert not seen & {ex.target for ex in result.splits.test}  # the test dates are unseen


@pytest.mark.slow
@pytest.mark.parametrize("scorer", list_plugins("scorers"))
@pytest.mark.parametrize("decoder", list_plugins("decoders"))
def test_every_scorer_trains_with_every_decoder(scorer, decoder):
    options = {"heads": 2} if scorer == "multihead" else {}
    config = ExperimentConfig(scorer=scorer, scorer_options=options, decoder=decoder, **TINY)
    result = run_experiment(config)
    assert torch.isfinite(torch.tensor(result.training.history[0]["train_loss"]))
    frame = result.evaluation.predictions
    assert frame["target"].tolist() == [ex.target for ex in result.splits.test]
    assert result.evaluation.metrics["exact_match"] == (frame["prediction"] == frame["target"]).mean()


@pytest.mark.slow
@pytest.mark.parametrize("encoder", list_plugins("encoders"))
def test_every_encoder_trains_on_padded_sources(encoder):
    config = ExperimentConfig(task="reverse", task_options={"min_length": 3, "max_length": 9}, encoder=encoder, **TINY)
    result = run_experiment(config)
    assert result.evaluation.metrics["pad_attention_mass"] == 0.0
    assert len(result.evaluation.per_length) > 1


@pytest.mark.slow
def test_lstm_decoder_cell_and_teacher_forcing_below_one_train():
    config = ExperimentConfig(decoder_options={"cell": "lstm"}, teacher_forcing=0.5, **TINY)
    half = run_experiment(config).training.history[0]["train_loss"]
    gold = run_experiment(config.model_copy(update={"teacher_forcing": 1.0})).training.history[0]["train_loss"]
    # training reads the ratio: more than the 1e-7 by which the two decoding paths differ alone
    assert abs(half - gold) > 1e-3


@pytest.mark.slow
def test_same_seed_same_run_on_cpu():
    config = ExperimentConfig(device="cpu", target_exact_match=None, **{**TINY, "epochs": 2})
    first, second = run_experiment(config), run_experiment(config)
    assert first.training.history[-1]["train_loss"] == second.training.history[-1]["train_loss"]
    for a, b in zip(first.model.state_dict().values(), second.model.state_dict().values()):
        assert torch.equal(a, b)


@pytest.mark.slow
def test_compiled_loops_train_like_the_eager_ones(monkeypatch):
    """``compile_loops`` sends training and validation through the compiled loops, and training
    goes as it does eagerly. The loops are captured whole (``fullgraph``) and run by the
    ``aot_eager`` backend here: what inductor generates for them is checked against the eager loops
    in tests/plugins/test_recurrence.py, at a tenth of this test's cost."""
    monkeypatch.setattr(recurrence, "_compiled", {})
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="aot_eager"))
    config = ExperimentConfig(device="cpu", target_exact_match=None, **{**TINY, "epochs": 2})
    eager = run_experiment(config)
    assert recurrence._compiled == {}
    compiled = run_experiment(config.model_copy(update={"compile_loops": True}))
    assert recurrence._compiled  # the loops were compiled and used
    for a, b in zip(eager.training.history, compiled.training.history):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-4)
    for a, b in zip(eager.model.state_dict().values(), compiled.model.state_dict().values()):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("lr_schedule", ["constant", "cosine"])
def test_resume_from_checkpoint_continues_where_it_stopped(tmp_path, lr_schedule):
    config = ExperimentConfig(device="cpu", target_exact_match=None, lr_schedule=lr_schedule, **{**TINY, "epochs": 3})
    task, splits = prepare_data(config)
    straight, _ = train_model(config, task, splits)

    checkpoint = tmp_path / "checkpoint.pt"
    calls = []

    def stop_after_two(metrics):
        calls.append(metrics["epoch"])
        if metrics["epoch"] == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_model(config, task, splits, on_epoch=stop_after_two, checkpoint=checkpoint)
    assert checkpoint.exists()
    resumed, result = train_model(config, task, splits, on_epoch=lambda m: calls.append(m["epoch"]), checkpoint=checkpoint)
    assert calls == [1, 2, 3]
    assert [m["epoch"] for m in result.history] == [1, 2, 3]
    for a, b in zip(straight.state_dict().values(), resumed.state_dict().values()):
        torch.testing.assert_close(a, b)


@pytest.mark.slow
def test_cosine_schedule_decays_the_learning_rate_to_zero_by_the_last_epoch():
    rates = {}
    for schedule in ("constant", "cosine"):
        config = ExperimentConfig(lr_schedule=schedule, learning_rate=0.01, target_exact_match=None, **{**TINY, "epochs": 4})
        rates[schedule] = [m["learning_rate"] for m in run_experiment(config).training.history]
    assert rates["constant"] == [0.01] * 4
    assert rates["cosine"][0] < 0.01 and rates["cosine"][-1] == pytest.approx(0.0, abs=1e-9)
    assert rates["cosine"] == sorted(rates["cosine"], reverse=True)


def test_checkpoint_of_another_config_is_refused(tmp_path):
    config = ExperimentConfig(**TINY)
    task, splits = prepare_data(config)
    checkpoint = tmp_path / "checkpoint.pt"
    train_model(config, task, splits, checkpoint=checkpoint)
    other = config.model_copy(update={"learning_rate": 0.1})
    with pytest.raises(ValueError, match="different configuration"):
        train_model(other, task, splits, checkpoint=checkpoint)


@pytest.mark.slow
def test_early_stop_at_target_exact_match():
    config = ExperimentConfig(epochs=10, target_exact_match=0.5, train_size=2000, validation_size=100, test_size=100)
    result = run_experiment(config)
    assert result.training.stopped_early
    assert len(result.training.history) < 10
    assert result.training.history[-1]["val_exact_match"] >= 0.5


def test_nan_loss_is_reported():
    config = ExperimentConfig(**TINY)
    task, splits = prepare_data(config)
    model = build_model(config, task)
    with torch.no_grad():
        model.decoder.out.bias.fill_(float("nan"))
    encode = lambda exs: encode_examples(exs, model.src_vocab, model.tgt_vocab)  # noqa: E731
    with pytest.raises(TrainingDiverged, match="lower the learning rate"):
        train(model, encode(splits.train), encode(splits.validation), config)


def test_length_bucketed_batches_cover_every_row_once_with_similar_lengths():
    from attnlab.training.loop import length_bucketed_batches

    lengths = torch.randint(5, 41, (1000,))
    batches = length_bucketed_batches(lengths, 32, torch.Generator().manual_seed(0), pool=10)
    assert sorted(torch.cat(batches).tolist()) == list(range(1000))
    assert max(len(b) for b in batches) == 32
    spread = sum(int(lengths[b].max() - lengths[b].min()) for b in batches) / len(batches)
    assert spread < 10  # random batches of 32 would spread over ~30


def test_validation_exact_match_counts_each_source_once_right_when_it_equals_any_target(monkeypatch):
    """A word with two pronunciations is one word: right when the output is either of them."""
    from attnlab.plugins import Example
    from attnlab.training import loop

    config = ExperimentConfig(**TINY)
    task, _ = prepare_data(config)
    model = build_model(config, task)
    examples = [
        Example("01-02-2003", "2003年01月02日", None),
        Example("01-02-2003", "2003年02月01日", None),
        Example("05-06-2007", "2007年06月05日", None),
    ]
    outputs = ["2003年02月01日", "2003年02月01日", "wrong"]  # greedy gives one output per source
    monkeypatch.setattr(loop, "decode_texts", lambda *args, **kwargs: outputs)
    data = encode_examples(examples, model.src_vocab, model.tgt_vocab)
    assert loop.validation_metrics(model, data)["val_exact_match"] == 0.5  # 1 of 2 sources, not 2 of 3 rows
