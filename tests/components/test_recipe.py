"""The training recipe's options: label smoothing, AdamW's weight decay, the warmup and the
schedules, and which weights a run keeps (the best epoch's, the mean of the last N)."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.data.splits import encode_examples
from attnlab.data.vocab import PAD
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model
from attnlab.training import loop
from attnlab.training.experiment import prepare_data, train_model
from attnlab.training.optimization import make_optimizer, make_schedule, sequence_loss
from attnlab.training.selection import Keeper, average_weights

TINY = dict(hidden_size=8, embedding_dim=4, train_size=64, validation_size=16, test_size=16, batch_size=32, epochs=1, device="cpu")


def test_label_smoothing_changes_the_loss_by_the_known_amount(monkeypatch):
    """Smoothed cross-entropy = (1 - s) x NLL of the gold token + s x the mean over the V tokens
    of their negative log-probabilities, averaged over the real (non-PAD) target tokens."""
    config = ExperimentConfig(**TINY)
    task, splits = prepare_data(config)
    model = build_model(config, task).eval()
    batch = encode_examples(splits.train[:4], model.src_vocab, model.tgt_vocab)
    batch.tgt[0, -3:] = PAD  # a shorter first target: PAD positions count for nothing
    with torch.no_grad():
        logits = model(batch.src, batch.src_mask, batch.tgt[:, :-1]).logits
        log_probs = logits.log_softmax(-1)
        gold = batch.tgt[:, 1:]
        real = gold != PAD
        nll = -log_probs.gather(-1, gold.clamp(min=0).unsqueeze(-1)).squeeze(-1)[real]
        uniform = -log_probs.mean(-1)[real]
        smoothing = 0.1
        expected = ((1 - smoothing) * nll + smoothing * uniform).mean()
        plain = sequence_loss(model, batch, 1.0)
        smoothed = sequence_loss(model, batch, 1.0, smoothing)
    torch.testing.assert_close(plain, nll.mean())
    torch.testing.assert_close(smoothed, expected)
    assert float(smoothed - plain) == pytest.approx(float(smoothing * (uniform - nll).mean()), abs=1e-6)  # float32 sums


def _rates(config: ExperimentConfig, examples: int) -> list[float]:
    """The learning rate of each optimisation step of a run on ``examples`` rows."""
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = make_optimizer(torch.nn.ParameterList([parameter]), config)
    schedule = make_schedule(optimizer, config, examples)
    rates = []
    for _ in range(config.epochs * math.ceil(examples / config.batch_size)):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    return rates


def test_warmup_rises_linearly_then_the_schedule_follows():
    base, warmup = 0.01, 4
    steps = 12  # 3 epochs of 4 steps (128 rows, batches of 32)
    common = dict(learning_rate=base, warmup_steps=warmup, epochs=3, batch_size=32)
    constant = _rates(ExperimentConfig(**common), 128)
    assert constant == pytest.approx([base * k / warmup for k in range(warmup)] + [base] * (steps - warmup), abs=1e-12)
    cosine = _rates(ExperimentConfig(lr_schedule="cosine", **common), 128)
    after = [base * (1 + math.cos(math.pi * j / (steps - warmup))) / 2 for j in range(steps - warmup)]
    assert cosine == pytest.approx([base * k / warmup for k in range(warmup)] + after, abs=1e-12)


def test_inverse_sqrt_divides_the_rate_by_the_root_of_the_steps():
    base = 0.01
    common = dict(learning_rate=base, lr_schedule="inverse_sqrt", epochs=3, batch_size=32)  # 12 steps on 128 rows
    warmed = _rates(ExperimentConfig(warmup_steps=4, **common), 128)
    assert warmed[:4] == pytest.approx([0.0, base / 4, base / 2, 3 * base / 4], abs=1e-12)
    assert warmed[4:] == pytest.approx([base * math.sqrt(4 / k) for k in range(4, 12)], abs=1e-12)  # base at step 4
    cold = _rates(ExperimentConfig(**common), 128)
    assert cold == pytest.approx([base / math.sqrt(k) for k in range(1, 13)], abs=1e-12)


def test_the_defaults_keep_a_constant_rate():
    assert _rates(ExperimentConfig(learning_rate=0.01, epochs=2, batch_size=32), 128) == [0.01] * 8


def test_weight_decay_shrinks_the_weights_on_a_zero_gradient_step():
    """AdamW on a zero gradient: Adam's update is 0 / (sqrt(0) + eps) = 0, and the decay
    multiplies every weight by 1 - lr x weight_decay."""
    torch.manual_seed(0)
    module = torch.nn.Linear(3, 2)
    before = [p.detach().clone() for p in module.parameters()]
    optimizer = make_optimizer(module, ExperimentConfig(learning_rate=0.01, weight_decay=0.5))
    for p in module.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    for old, new in zip(before, module.parameters()):
        torch.testing.assert_close(new.detach(), old * (1 - 0.01 * 0.5))
    plain = make_optimizer(module, ExperimentConfig(learning_rate=0.01))
    kept = [p.detach().clone() for p in module.parameters()]
    plain.step()
    assert all(torch.equal(a, b) for a, b in zip(kept, module.parameters()))  # no decay by default


def test_the_average_of_checkpoints_is_the_mean_of_their_weights():
    states = [
        {"w": torch.full((2, 2), float(value)), "b": torch.tensor([value, 2.0 * value]), "n": torch.tensor(value)} for value in (1, 2, 6)
    ]
    states = [{**state, "n": state["n"].long()} for state in states]
    averaged = average_weights(states)
    torch.testing.assert_close(averaged["w"], torch.full((2, 2), 3.0))
    torch.testing.assert_close(averaged["b"], torch.tensor([3.0, 6.0]))
    assert averaged["n"].dtype == torch.long and int(averaged["n"]) == 6  # a counter: the last one's


def _scripted_validation(monkeypatch, scores: list[float]) -> tuple[list[dict[str, torch.Tensor]], list[float]]:
    """Validation answers the exact matches of ``scores`` in turn (the queue returned, which a test
    may refill); the model's weights at each validation go to the list returned."""
    weights: list[dict[str, torch.Tensor]] = []
    queue = list(scores)

    def validation(model, data, max_length=None):
        weights.append({key: value.detach().clone() for key, value in model.state_dict().items()})
        score = queue.pop(0)
        return {"val_loss": 1.0 - score, "val_exact_match": score}

    monkeypatch.setattr(loop, "validation_metrics", validation)
    return weights, queue


def _equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


def test_the_best_checkpoint_is_the_one_kept_and_saved(monkeypatch, tmp_path):
    from attnlab.model.bundle import load_bundle, save_bundle

    weights, _ = _scripted_validation(monkeypatch, [0.1, 0.5, 0.3])  # the peak before the last epoch
    config = ExperimentConfig(checkpoint="best", target_exact_match=None, **{**TINY, "epochs": 3})
    task, splits = prepare_data(config)
    model, result = train_model(config, task, splits)
    assert len(weights) == 3 and not _equal(weights[1], weights[2])
    assert result.selected == {"selected_epoch": 2.0, "averaged_epochs": 1.0, "selected_val_exact_match": 0.5, "selected_val_loss": 0.5}
    assert _equal(model.state_dict(), weights[1])
    _, _, saved = load_bundle(save_bundle(tmp_path / "bundle", config, model))
    assert _equal(saved.state_dict(), weights[1])


def test_a_tie_on_exact_match_goes_to_the_lower_loss_and_a_full_tie_to_the_earlier_epoch():
    keeper = Keeper(ExperimentConfig(checkpoint="best"))
    model = torch.nn.Linear(1, 1)
    for epoch, (score, loss) in enumerate([(0.5, 0.4), (0.5, 0.3), (0.5, 0.3), (0.4, 0.1)], 1):
        keeper.observe(model, {"epoch": epoch, "val_exact_match": score, "val_loss": loss})
    assert keeper.best_epoch == 2


def test_the_last_epoch_is_kept_by_default(monkeypatch):
    weights, _ = _scripted_validation(monkeypatch, [0.1, 0.5, 0.3])
    config = ExperimentConfig(target_exact_match=None, **{**TINY, "epochs": 3})
    task, splits = prepare_data(config)
    model, result = train_model(config, task, splits)
    assert result.selected["selected_epoch"] == 3.0 and _equal(model.state_dict(), weights[2])


def test_average_last_keeps_the_mean_of_the_last_epochs_and_measures_it(monkeypatch):
    weights, _ = _scripted_validation(monkeypatch, [0.1, 0.2, 0.3, 0.4])  # the 4th validates the average
    config = ExperimentConfig(average_last=2, target_exact_match=None, **{**TINY, "epochs": 3})
    task, splits = prepare_data(config)
    model, result = train_model(config, task, splits)
    mean = average_weights(weights[1:3])
    assert _equal(model.state_dict(), mean) and _equal(weights[3], mean)
    assert result.selected == {
        "selected_epoch": 3.0,
        "averaged_epochs": 2.0,
        "selected_val_exact_match": 0.4,
        "selected_val_loss": pytest.approx(0.6),
    }


@pytest.mark.parametrize(
    "update",
    [{"checkpoint": "best"}, {"average_last": 2}, {"warmup_steps": 5, "lr_schedule": "inverse_sqrt"}],
    ids=["best", "average", "warmup"],
)
def test_a_resumed_run_keeps_what_its_selection_kept_before(monkeypatch, tmp_path, update):
    """Stopped after epoch 2 (the best), resumed for epoch 3: the model ends with epoch 2's
    weights (checkpoint best) or the mean of epochs 2 and 3 (average_last 2), as straight through;
    a warmup and its schedule go on where they stopped."""
    config = ExperimentConfig(target_exact_match=None, **{**TINY, "epochs": 3}, **update)
    task, splits = prepare_data(config)
    scores = [0.1, 0.5, 0.3, 0.0]  # the 4th validates an average
    _, queue = _scripted_validation(monkeypatch, scores)
    straight, _ = train_model(config, task, splits)
    queue[:] = scores
    checkpoint = tmp_path / "checkpoint.pt"
    with pytest.raises(KeyboardInterrupt):
        train_model(config, task, splits, on_epoch=_stop_at(2), checkpoint=checkpoint)
    resumed, result = train_model(config, task, splits, checkpoint=checkpoint)
    assert [m["epoch"] for m in result.history] == [1, 2, 3]
    assert result.selected["selected_epoch"] == (2.0 if "checkpoint" in update else 3.0)
    assert _equal(straight.state_dict(), resumed.state_dict())


def test_a_checkpoint_written_before_the_recipe_options_still_resumes(tmp_path):
    """A checkpoint whose config lacks the recipe's keys (written before they existed) holds
    their defaults: it resumes."""
    config = ExperimentConfig(target_exact_match=None, **{**TINY, "epochs": 2})
    task, splits = prepare_data(config)
    checkpoint = tmp_path / "checkpoint.pt"
    with pytest.raises(KeyboardInterrupt):
        train_model(config, task, splits, on_epoch=_stop_at(1), checkpoint=checkpoint)
    state = torch.load(checkpoint, weights_only=True)
    for key in ("dropout", "label_smoothing", "weight_decay", "warmup_steps", "checkpoint", "average_last"):
        del state["config"][key]
    del state["selection"]
    torch.save(state, checkpoint)
    torch.save({**state, "config": {**state["config"], "epochs": 0}}, tmp_path / "invalid.pt")
    with pytest.raises(ValueError, match="was written by a different configuration"):  # one line, not pydantic's report
        train_model(config, task, splits, checkpoint=tmp_path / "invalid.pt")
    _, result = train_model(config, task, splits, checkpoint=checkpoint)
    assert [m["epoch"] for m in result.history] == [1, 2] and result.selected["selected_epoch"] == 2.0


def _stop_at(epoch: int):
    """An epoch callback that interrupts the run once ``epoch`` is done (its checkpoint written)."""

    def stop(metrics):
        if metrics["epoch"] == epoch:
            raise KeyboardInterrupt

    return stop


@pytest.mark.parametrize(
    "option",
    [{"label_smoothing": 0.2}, {"weight_decay": 0.5}, {"warmup_steps": 2}, {"lr_schedule": "inverse_sqrt"}, {"dropout": 0.3}],
    ids=lambda option: next(iter(option)),
)
def test_each_option_reaches_the_training(option):
    """A run with the option trains differently from the default run (its first step's loss alone
    for label smoothing, its weights for the others); both runs see the same batches."""
    config = ExperimentConfig(target_exact_match=None, learning_rate=0.05, **{**TINY, "batch_size": 16})
    task, splits = prepare_data(config)
    plain, plain_result = train_model(config, task, splits)
    other, other_result = train_model(config.model_copy(update=option), task, splits)
    if "label_smoothing" in option:
        assert other_result.history[0]["train_loss"] > plain_result.history[0]["train_loss"]
    assert not _equal(plain.state_dict(), other.state_dict())
