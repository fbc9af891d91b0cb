"""What a study decides of its trials: the best one, the budget, the seed, the name, the table."""

from __future__ import annotations

import pytest

from attnlab.lab.errors import UserError
from attnlab.tuning.trials import (
    BASELINE_ATTR,
    INTERRUPTED,
    TrialRecord,
    best_trial,
    counts,
    format_trials,
    needs_baseline,
    parse_duration,
    sampler_seed,
    study_name,
    trial_rows,
    trials_left,
)

TRIALS = [
    TrialRecord(0, "COMPLETE", 0.80, {"learning_rate": 0.001}),
    TrialRecord(1, "COMPLETE", 0.90, {"learning_rate": 0.003}),
    TrialRecord(2, "PRUNED", None, {"learning_rate": 0.1}),
    TrialRecord(3, "COMPLETE", 0.90, {"learning_rate": 0.004}),
    TrialRecord(4, "FAIL", None, {"learning_rate": 0.002}, {"attnlab.outcome": INTERRUPTED}),
    TrialRecord(5, "FAIL", None, {"learning_rate": 10.0}, {"attnlab.outcome": "TrainingDiverged: loss became nan"}),
    TrialRecord(6, "COMPLETE", float("nan"), {"learning_rate": 0.005}),
]


def test_the_best_trial_follows_the_direction_and_the_lower_number_wins_a_tie():
    assert best_trial(TRIALS, "val_exact_match").number == 1
    assert best_trial(TRIALS, "val_loss").number == 0
    assert best_trial([r for r in TRIALS if r.state != "COMPLETE"], "val_loss") is None


def test_interrupted_trials_do_not_count_against_the_budget():
    assert [counts(r) for r in TRIALS] == [True, True, True, True, False, True, True]
    assert trials_left(8, TRIALS) == 2 and trials_left(8, TRIALS, running=1) == 1 and trials_left(3, TRIALS) == 0


def test_a_resumed_study_seeds_its_sampler_past_the_trials_it_holds():
    assert sampler_seed(0, []) == 0 and sampler_seed(7, TRIALS) == 14


def test_the_study_is_named_by_its_arm_and_a_digest_of_config_and_space():
    base = {"task": "reverse", "scorer": "dot", "encoder": "gru", "decoder": "rnn", "epochs": 3}
    name = study_name(base, {"space": {"dropout": "float [0, 0.3]"}})
    assert name.startswith("tune-reverse-dot-gru-rnn-") and name == study_name(dict(base), {"space": {"dropout": "float [0, 0.3]"}})
    assert name != study_name({**base, "epochs": 4}, {"space": {"dropout": "float [0, 0.3]"}})


@pytest.mark.parametrize("text, seconds", [("90", 90.0), ("90s", 90.0), ("30m", 1800.0), ("1.5h", 5400.0), (None, None)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "-5", "ten", "5d"])
def test_bad_durations_are_refused(text):
    with pytest.raises(UserError, match="give a positive duration"):
        parse_duration(text)


def test_the_trials_table_marks_the_best_and_says_why_a_trial_did_not_complete():
    rows = trial_rows(TRIALS, {1: "abcdef0123456789"})
    assert rows[1]["run_id"] == "abcdef0123456789" and rows[1]["param learning_rate"] == 0.003
    text = format_trials(rows, "val_exact_match", best_trial(TRIALS, "val_exact_match"))
    lines = text.splitlines()
    assert lines[0].split() == ["trial", "state", "val_exact_match", "s", "learning_rate", "run"]
    assert lines[2].startswith("1 *") and "abcdef01" in lines[2]
    assert "FAIL (interrupted)" in lines[5]


def test_a_baseline_trial_is_queued_once_again_after_an_interruption_and_not_past_the_budget():
    baseline = {BASELINE_ATTR: True}
    assert needs_baseline([], 3)
    for state in ("COMPLETE", "PRUNED", "RUNNING", "WAITING"):
        assert not needs_baseline([TrialRecord(0, state, None, {}, baseline)], 3), state
    assert needs_baseline([TrialRecord(0, "FAIL", None, {}, {**baseline, "attnlab.outcome": INTERRUPTED})], 3)  # cut: queued again
    assert not needs_baseline([TrialRecord(0, "FAIL", None, {}, {**baseline, "attnlab.outcome": "ValueError: x"})], 3)  # it counted
    assert needs_baseline(TRIALS, 8) and not needs_baseline(TRIALS, 6)  # TRIALS count 6: no room left
    rows = trial_rows([TrialRecord(0, "COMPLETE", 0.5, {"learning_rate": 0.001}, baseline)], {})
    assert rows[0]["note"] == "baseline" and "COMPLETE (baseline)" in format_trials(rows, "val_exact_match", None)
