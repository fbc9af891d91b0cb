"""The search space of attnlab tune: what it reads, what it refuses in one line, the extremes
checked before a study starts."""

from __future__ import annotations

import re

import pytest

from attnlab.lab.config import ExperimentConfig
from attnlab.lab.errors import UserError
from attnlab.tuning.space import Choice, Range, apply_values, baseline_values, extreme_values, parse_space

GOOD = {
    "space": {
        "learning_rate": {"low": "1e-4", "high": 1.0e-2, "log": True},
        "hidden_size": {"low": 16, "high": 64, "step": 16},
        "dropout": {"low": 0, "high": 0.3},
        "lr_schedule": ["constant", "cosine"],
        "scorer.heads": {"choices": [1, 2]},
    },
    "objective": "val_loss",
    "pruner": {"name": "median", "startup_trials": 2},
}


def test_a_space_reads_ranges_choices_and_plugin_options():
    space = parse_space(GOOD)
    dims = space.dimensions
    assert dims["learning_rate"] == Range(1e-4, 1e-2, integer=False, log=True)
    assert dims["hidden_size"] == Range(16, 64, integer=True, step=16)
    assert dims["dropout"] == Range(0.0, 0.3)  # a float field: its range is a float range, ints or not
    assert dims["lr_schedule"] == Choice(("constant", "cosine")) and dims["scorer.heads"] == Choice((1, 2))
    assert space.objective == "val_loss" and space.pruner == {"name": "median", "startup_trials": 2, "warmup_epochs": 1}
    assert parse_space({"space": {"dropout": [0.1]}}).pruner["name"] == "median"  # the default


@pytest.mark.parametrize(
    "space, needles",
    [
        ({"lerning_rate": {"low": 1, "high": 2}}, ["unknown search space key 'lerning_rate'", "allowed: ", "learning_rate"]),
        ({"learning_rate": {"low": 0.01, "high": 0.01}}, ["'learning_rate'", "is empty"]),
        ({"learning_rate": {"low": 0.1, "high": 0.01}}, ["low 0.1 is above high 0.01"]),
        ({"learning_rate": {"low": 0, "high": 0.01, "log": True}}, ["a log scale needs low > 0, got 0"]),
        ({"hidden_size": {"low": 16.5, "high": 64}}, ["'hidden_size' takes whole numbers"]),
        ({"epochs": {"low": 1, "high": 5}}, ["'epochs' cannot be searched", "budget"]),
        ({"scorer": ["dot", "additive"]}, ["'scorer' cannot be searched", "arm"]),
        ({"task.max_length": [5, 10]}, ["GROUP one of scorer, encoder, decoder"]),
        ({"lr_schedule": []}, ["'lr_schedule'", "empty"]),
        ({"lr_schedule": ["cosine", "cosine"]}, ["listed twice"]),
        ({"dropout": {"low": 0, "hi": 1}}, ["a range takes low, high", "unknown 'hi'"]),
        ({"dropout": "0.1"}, ["give a range", "or a list of choices"]),
        ({"learning_rate": {"low": "fast", "high": 1}}, ["low 'fast' is not a number"]),
    ],
)
def test_a_bad_space_is_one_line_naming_the_key(space, needles):
    with pytest.raises(UserError) as caught:
        parse_space({"space": space})
    message = str(caught.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, (needle, message)


@pytest.mark.parametrize(
    "data, needle",
    [
        ({}, "must hold a mapping 'space:'"),
        ({"space": {"dropout": [0.1]}, "trials": 3}, "unknown key 'trials'"),
        ({"space": {"dropout": [0.1]}, "objective": "accuracy"}, "objective 'accuracy': choose one of val_exact_match, val_loss"),
        ({"space": {"dropout": [0.1]}, "pruner": "asha"}, "pruner 'asha': choose one of median, hyperband, threshold, none"),
        ({"space": {"dropout": [0.1]}, "pruner": {"name": "median", "patience": 3}}, "the median pruner has no setting 'patience'"),
        ({"space": {"dropout": [0.1]}, "pruner": "threshold"}, "needs lower or upper"),
    ],
)
def test_a_bad_space_file_is_refused(data, needle):
    with pytest.raises(UserError, match=needle):
        parse_space(data)


def test_values_apply_to_the_config_and_plugin_options():
    base = ExperimentConfig(scorer="multihead", scorer_options={"dropout": 0.1})
    config = apply_values(base, {"learning_rate": 0.01, "scorer.heads": 2})
    assert config.learning_rate == 0.01 and config.scorer_options == {"dropout": 0.1, "heads": 2}
    with pytest.raises(UserError, match="bad value 2.0 for dropout"):
        apply_values(base, {"dropout": 2.0})


def test_the_extremes_are_each_dimension_alone_then_all_low_and_all_high():
    space = parse_space({"space": {"learning_rate": {"low": 0.001, "high": 0.01}, "lr_schedule": ["constant", "cosine", "inverse_sqrt"]}})
    assert extreme_values(space) == [
        {"learning_rate": 0.001}, {"learning_rate": 0.01},
        {"lr_schedule": "constant"}, {"lr_schedule": "cosine"}, {"lr_schedule": "inverse_sqrt"},
        {"learning_rate": 0.001, "lr_schedule": "constant"}, {"learning_rate": 0.01, "lr_schedule": "inverse_sqrt"},
    ]  # fmt: skip


def test_a_baseline_trial_takes_the_configs_own_values_each_inside_its_dimension():
    space = parse_space({**GOOD, "baseline": True})
    base = ExperimentConfig(scorer="multihead", scorer_options={"heads": 2}, learning_rate=0.002, hidden_size=32, lr_schedule="cosine",
                          dropout=0.0)  # fmt: skip
    assert space.baseline and baseline_values(space, base) == {
        "learning_rate": 0.002, "hidden_size": 32, "dropout": 0.0, "lr_schedule": "cosine", "scorer.heads": 2,
    }  # fmt: skip
    for config, needle in [
        (
            base.model_copy(update={"learning_rate": 0.05}),
            "the config's learning_rate 0.05 is outside the space (float [0.0001, 0.01] log)",
        ),
        (
            base.model_copy(update={"lr_schedule": "inverse_sqrt"}),
            "lr_schedule 'inverse_sqrt' is outside the space (one of constant, cosine)",
        ),
        (base.model_copy(update={"scorer_options": {}}), "the config does not set scorer.heads"),
        (base.model_copy(update={"dropout": None}), "the config does not set dropout (each plugin's own applies)"),
        (base.model_copy(update={"scorer_options": {"heads": True}}), "scorer.heads True is outside the space"),  # not the choice 1
    ]:
        with pytest.raises(UserError, match=re.escape(needle)):
            baseline_values(space, config)


def test_baseline_is_true_or_false_and_names_a_study_only_when_set():
    with pytest.raises(UserError, match="baseline 'yes': give true"):
        parse_space({**GOOD, "baseline": "yes"})
    plain = parse_space(GOOD)
    assert not plain.baseline and "baseline" not in plain.as_dict()  # the studies of earlier spaces keep their names
    assert parse_space({**GOOD, "baseline": True}).as_dict() == {**plain.as_dict(), "baseline": True}
