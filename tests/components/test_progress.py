"""Progress inside an epoch: the step callback of training, when a plain line is due, the points
of the loss curve, and run_experiment's log lines."""

from __future__ import annotations

import logging
import math

import pytest

from attnlab.data.splits import DEFAULT_SIZES, encode_examples
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model
from attnlab.training.experiment import prepare_data, run_experiment
from attnlab.training.loop import train
from attnlab.training.progress import PeriodicLines, StepCurve, StepProgress, curve_interval, step_line

TINY = dict(train_size=100, validation_size=20, test_size=20, embedding_dim=7, hidden_size=7, seed=42)


def _progress(step: int, steps: int = 20, epoch: int = 1, loss: float = 1.0) -> StepProgress:
    return StepProgress(epoch, 3, step, steps, (epoch - 1) * steps + step, step * 8, steps * 8, loss, loss, 1000.0)


@pytest.mark.slow
def test_training_reports_every_step_with_the_epoch_it_belongs_to():
    config = ExperimentConfig(**TINY, epochs=2, batch_size=16)
    task, splits = prepare_data(config)
    model = build_model(config, task)
    encode = lambda examples: encode_examples(examples, model.src_vocab, model.tgt_vocab)  # noqa: E731
    steps: list[StepProgress] = []
    result = train(model, encode(splits.train), encode(splits.validation), config, on_step=steps.append)
    per_epoch = math.ceil(100 / 16)
    assert [(p.epoch, p.step) for p in steps] == [(e, s) for e in (1, 2) for s in range(1, per_epoch + 1)]
    assert [p.global_step for p in steps] == list(range(1, 2 * per_epoch + 1))
    assert {p.steps for p in steps} == {per_epoch} and {p.epochs for p in steps} == {2}
    last = [p for p in steps if p.step == per_epoch]
    assert [p.samples for p in last] == [100, 100] and {p.epoch_samples for p in steps} == {100}
    # the running loss at an epoch's last step is the epoch's training loss
    assert [p.running_loss for p in last] == pytest.approx([h["train_loss"] for h in result.history])
    assert all(p.samples_per_second > 0 and math.isfinite(p.loss) for p in steps)


def test_plain_lines_come_at_each_quarter_of_an_epoch_and_every_ten_seconds():
    lines = PeriodicLines(seconds=10, fraction=0.25)
    due = [p.step for p in map(_progress, range(1, 21)) if lines.due(p, now=0.0)]
    assert due == [5, 10, 15]  # the 20th step ends the epoch: its own line says it
    due = [p.step for p in (_progress(s, epoch=2) for s in range(1, 21)) if lines.due(p, now=0.0)]
    assert due == [5, 10, 15]  # the marks start again each epoch
    slow = PeriodicLines(seconds=10, fraction=0.25)
    steps = [_progress(s, steps=1000) for s in (1, 2, 3, 4)]
    assert [slow.due(p, now) for p, now in zip(steps, (0.0, 9.0, 10.5, 12.0))] == [False, False, True, False]
    slow.reset_clock(30.0)  # an epoch line was printed
    assert not slow.due(_progress(5, steps=1000), 39.0) and slow.due(_progress(6, steps=1000), 40.0)


def test_the_loss_curve_has_tens_of_points_in_a_default_epoch():
    steps = math.ceil(DEFAULT_SIZES[0] / ExperimentConfig().batch_size)
    every = curve_interval(steps)
    curve = StepCurve(every)
    points = [point for s in range(1, steps + 1) if (point := curve.add(_progress(s, steps, loss=float(s)))) is not None]
    assert 10 <= len(points) <= 50
    assert points[0] == (every, sum(range(1, every + 1)) / every)  # the mean of the steps since the last point
    assert points[-1][0] == steps  # an epoch's last steps make a point too
    assert curve_interval(3) == 1


def test_step_line_says_where_the_epoch_stands():
    line = step_line(StepProgress(2, 20, 30, 47, 77, 1920, 3000, 0.5, 0.75, 2345.6))
    assert line.split() == "epoch 2/20 step 30/47 (64%) train_loss 0.7500 2,346 samples/s".split()


@pytest.mark.slow
def test_run_experiment_says_how_training_goes_unless_silenced(caplog):
    config = ExperimentConfig(**TINY, epochs=1, batch_size=10)
    with caplog.at_level(logging.NOTSET):
        run_experiment(config)
    said = [r.getMessage() for r in caplog.records if r.name == "attnlab.progress"]
    assert {"3/10", "5/10", "8/10"} <= {line.split()[3] for line in said[:-1]}, said  # each quarter
    assert said[-1].split()[2] == "train_loss" and "val_exact_match" in said[-1]
    caplog.clear()
    logger = logging.getLogger("attnlab.progress")
    logger.setLevel(logging.WARNING)
    try:
        run_experiment(config)
    finally:
        logger.setLevel(logging.NOTSET)
    assert not [r for r in caplog.records if r.name == "attnlab.progress"]


@pytest.mark.slow
def test_run_experiment_prints_on_stderr_where_logging_is_not_configured(capfd):
    # As in a plain script: no handler anywhere (pytest's capture handlers, or one another test of
    # this worker left) and no level set on the attnlab loggers.
    loggers = [logging.getLogger(), logging.getLogger("attnlab"), logging.getLogger("attnlab.progress")]
    saved = [(logger.handlers, logger.level) for logger in loggers]
    for logger in loggers[1:]:
        logger.setLevel(logging.NOTSET)
    for logger in loggers:
        logger.handlers = []
    try:
        run_experiment(ExperimentConfig(**TINY, epochs=1, batch_size=10))
        left_behind = logging.getLogger("attnlab.progress").handlers
    finally:
        for logger, (handlers, level) in zip(loggers, saved):
            logger.handlers, logger.level = handlers, level
    err = capfd.readouterr().err
    assert "epoch   1/1  step 3/10" in err and "val_exact_match" in err
    assert not left_behind
