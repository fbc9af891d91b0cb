"""The experiment config refuses bad values with messages that name them."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.plugins import PluginError


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("hidden_size", -4, "greater than 0"),
        ("epochs", 0, "greater than 0"),
        ("teacher_forcing", 1.5, "less than or equal to 1"),
        ("device", "tpu", "unknown device 'tpu'"),
        ("colour", "red", "Extra inputs are not permitted"),
        # upper bounds and finite floats: each value once ran into a traceback or a late failure
        ("hidden_size", 1_000_000, "less than or equal to 2048"),  # was a 12 TB allocation
        ("embedding_dim", 1_000_000, "less than or equal to 2048"),
        ("train_size", 10**9, "less than or equal to 1000000"),
        ("test_size", 10**9, "less than or equal to 1000000"),
        ("batch_size", 10**7, "less than or equal to 100000"),
        ("beam_size", 10**6, "less than or equal to 100"),
        ("epochs", 10**6, "less than or equal to 10000"),
        ("seed", 10**20, "less than 4294967296"),  # overflowed torch's seed after the run started
        ("learning_rate", "inf", "finite number"),
        ("learning_rate", "1e999", "finite number"),
        ("learning_rate", "nan", "finite number"),
        ("learning_rate", 1e35, r"at most 1e\+30"),
        ("clip_norm", "inf", "finite number"),
        ("teacher_forcing", "nan", "finite number"),
        # the training recipe
        ("dropout", 1.0, r"must be a number in \[0, 1\)"),
        ("dropout", -0.1, r"must be a number in \[0, 1\)"),
        ("dropout", "nan", r"must be a number in \[0, 1\)"),
        ("label_smoothing", 1.5, r"must be a number in \[0, 1\)"),
        ("label_smoothing", "inf", r"must be a number in \[0, 1\)"),
        ("weight_decay", -0.01, "greater than or equal to 0"),
        ("weight_decay", "inf", "finite number"),
        ("weight_decay", 1000, r"learning_rate x weight_decay must stay below 1 .* use a weight_decay below 200"),
        ("warmup_steps", -1, "greater than or equal to 0"),
        ("warmup_steps", 1.5, "valid integer"),
        ("explain_examples", -1, "greater than or equal to 0"),
        ("explain_steps", 1, "greater than or equal to 2"),
        ("explain_steps", 5000, "less than or equal to 1024"),
        ("lr_schedule", "linear", "'constant', 'cosine' or 'inverse_sqrt'"),
        ("checkpoint", "first", "'last' or 'best'"),
        ("average_last", 0, "greater than 0"),
        ("average_last", 21, r"must be at most epochs \(20\)"),
    ],
)
def test_bad_values_are_refused(field, value, message):
    with pytest.raises(ValidationError, match=message):
        ExperimentConfig(**{field: value})


def test_average_last_goes_with_the_last_checkpoint_only():
    with pytest.raises(ValidationError, match="goes with checkpoint 'last' only; set checkpoint=last or average_last=1"):
        ExperimentConfig(checkpoint="best", average_last=3)
    assert ExperimentConfig(checkpoint="best", average_last=1).average_last == 1
    assert ExperimentConfig(average_last=3, epochs=3).average_last == 3


def test_config_is_frozen():
    with pytest.raises(ValidationError):
        ExperimentConfig().epochs = 3


def test_auto_device_is_cpu_without_cuda():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert ExperimentConfig().torch_device().type == expected


@pytest.mark.parametrize(
    "update,message",
    [
        ({"scorer": "cosine"}, "unknown scorer 'cosine'; available: additive, dot, general, multihead, none, scaled_dot"),
        ({"encoder": "cnn"}, "unknown encoder 'cnn'; available: bigru, gru, lstm, transformer"),
        ({"task": "sort"}, "unknown task 'sort'; available: cmudict, date, date-formats, pairs, reverse"),
        ({"scorer": "multihead", "scorer_options": {"heads": 5}}, "scorer 'multihead': heads=5 does not divide model_dim=128"),
        ({"scorer": "dot", "encoder": "gru", "hidden_size": 8, "decoder_options": {"colour": 1}}, "unknown option"),
        ({"encoder_options": {"layers": 0}}, "layers must be a positive integer, got 0"),
        ({"task_options": {"min_year": 2030, "max_year": 2000}}, r"min_year \(2030\) must be <= max_year \(2000\)"),
    ],
)
def test_bad_plugin_choices_are_plugin_errors(update, message):
    config = ExperimentConfig(**update)
    with pytest.raises(PluginError, match=message):
        build_model(config, build_task(config))


def test_a_relative_task_path_is_made_absolute_where_the_command_runs(tmp_path, monkeypatch):
    from attnlab.lab.config_sources import build_config

    monkeypatch.chdir(tmp_path)
    config = build_config(None, {"task": "pairs"}, ["task.path=data/words.csv", "test_task.path=/srv/test.csv", "task.max_length=9"])
    assert config.task_options == {"path": str(tmp_path / "data" / "words.csv"), "max_length": 9}
    assert config.test_task_options == {"path": "/srv/test.csv"}
    assert build_config(None, {}, ["task.max_length=9"]).task_options == {"max_length": 9}
