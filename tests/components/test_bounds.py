"""Inputs without upper bounds and values that failed late (the config's bounds are in test_config.py): the
device check, safe experiment names, the reverse task's length, predict's source limit and the
divergence rule."""

from __future__ import annotations

import math
import time

import pytest

from attnlab.lab.config import MAX_WIDTH, ExperimentConfig, device_problem
from attnlab.lab.errors import UserError
from attnlab.lab.names import check_name
from attnlab.model.assembly import build_model, build_task
from attnlab.model.predict import check_sources, predict, source_limit
from attnlab.plugins.builtin.reverse_task import MAX_REVERSE_LENGTH, ReverseTask
from attnlab.training.loop import DIVERGENCE_FACTOR, TrainingDiverged, divergence

TINY = dict(hidden_size=8, embedding_dim=8)


def test_the_bounds_themselves_are_accepted():
    config = ExperimentConfig(hidden_size=MAX_WIDTH, seed=-(2**32) + 1, learning_rate=1e30, beam_size=100)
    assert config.hidden_size == MAX_WIDTH and config.learning_rate == 1e30


@pytest.mark.parametrize(
    "device, count, problem",
    [
        ("auto", 0, None),
        ("cpu", 0, None),
        ("cuda", 1, None),
        ("cuda:1", 2, None),
        ("cuda", 0, "device 'cuda' is not available: no CUDA device here; use 'auto' or 'cpu'"),
        ("cuda:2", 2, "device 'cuda:2' is not available: 2 CUDA device(s) here (cuda:0..cuda:1)"),
    ],
)
def test_device_problem(device, count, problem):
    found = device_problem(device, count)
    assert found == problem if problem is None else found.startswith(problem)


@pytest.mark.parametrize("name", ["attnlab-date", "my_exp.v2", "A1", "-x", "x" * 128])
def test_safe_experiment_names_pass(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["../../escape_exp", "a/b", "a\\b", ".hidden", "..", "", "with space", "x" * 129, "exp\n", "日付"])
def test_unsafe_experiment_names_are_refused(name):
    with pytest.raises(UserError, match="--experiment"):
        check_name(name)


def test_reverse_task_length_is_bounded():
    assert ReverseTask(max_length=MAX_REVERSE_LENGTH).max_source_length == MAX_REVERSE_LENGTH
    with pytest.raises(ValueError, match="max_length must be at most 512, got 1000000000"):
        ReverseTask(max_length=1_000_000_000)


def test_source_limit_is_the_longest_training_or_test_source():
    assert source_limit(build_task(ExperimentConfig())) == 10  # dd-mm-yyyy
    reverse = ExperimentConfig(task="reverse", task_options={"max_length": 12})
    assert source_limit(build_task(reverse)) == 12
    longer_test = reverse.model_copy(update={"test_task_options": {"max_length": 30}})
    assert source_limit(build_task(longer_test), build_task(longer_test, split="test")) == 30


def test_a_date_of_10000_characters_is_refused_at_once():
    config = ExperimentConfig(**TINY)
    task = build_task(config)
    model = build_model(config, task)
    text = "25-12-2023" * 1000
    started = time.perf_counter()
    with pytest.raises(ValueError, match=r"has 10000 characters; this model's task has sources of at most 10$"):
        predict(model, task, [text], longest=source_limit(task))
    assert time.perf_counter() - started < 1  # it decoded for over 300 s
    check_sources(["25-12-2023"], task, model, source_limit(task))


@pytest.mark.parametrize(
    "loss, first, diverged",
    [
        (math.nan, None, True),
        (math.inf, 2.0, True),
        (2.5, None, False),
        (0.5, 2.0, False),
        (DIVERGENCE_FACTOR * 2.0, 2.0, False),
        (DIVERGENCE_FACTOR * 2.0 + 1, 2.0, True),
        (4.6e32, 2.6, True),  # lr 1e30 never became NaN
    ],
)
def test_divergence_rule(loss, first, diverged):
    assert (divergence(loss, first) is not None) == diverged


def test_a_loss_that_explodes_without_nan_stops_training():
    """The real run of the issue, tiny: learning rate 1e30 gave losses near 1e32, never NaN."""
    from attnlab.data.splits import encode_examples, make_splits
    from attnlab.training.loop import train

    config = ExperimentConfig(**TINY, learning_rate=1e30, epochs=2, batch_size=16)
    task = build_task(config)
    model = build_model(config, task)
    splits = make_splits(task, (64, 16, 16), seed=0)
    data = [encode_examples(split, model.src_vocab, model.tgt_vocab) for split in (splits.train, splits.validation)]
    with pytest.raises(TrainingDiverged, match=r"loss grew to .*, over 1000x the first one .* at epoch 1"):
        train(model, *data, config)
