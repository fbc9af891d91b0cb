"""The one promotion rule and what makes a model comparable with a benchmark (pure, no MLflow)."""

from __future__ import annotations

import math

import pytest

from attnlab.ops.promotion import check_margin, decide, incomparable_reason, overlap
from attnlab.plugins import Example, create_plugin

NAN = float("nan")


@pytest.mark.parametrize(
    "challenger, champion, margin, promoted, says",
    [
        (0.9, None, 0.0, True, "first champion"),  # no champion yet
        (0.9, 0.8, 0.0, True, "beats champion 0.8000 by 0.1000"),
        (0.8, 0.8, 0.0, False, "difference +0.0000"),  # a tie never wins
        (0.7, 0.8, 0.0, False, "does not beat"),
        (0.85, 0.8, 0.05, False, "margin 0.0500"),  # a difference equal to the margin is not enough
        (0.75, 0.7, 0.05, False, "does not beat"),  # ... also where float subtraction gives 0.0500000000000000444
        (0.86, 0.8, 0.05, True, "beats"),
        (NAN, None, 0.0, False, "NaN"),  # a NaN first model never becomes champion
        (NAN, 0.5, 0.0, False, "NaN"),
        (0.0, NAN, 0.0, True, "champion scores NaN"),  # a broken champion loses to any number
    ],
)
def test_decide(challenger, champion, margin, promoted, says):
    decided, reason = decide(challenger, champion, margin)
    assert decided is promoted
    assert says in reason


def test_the_margin_is_an_exact_match_difference_in_0_1():
    for good in (0.0, 0.01, 0.999):
        check_margin(good)
    for bad in (-0.01, 1.0, 1.5, NAN):
        with pytest.raises(ValueError, match=r"margin must be in \[0, 1\)"):
            check_margin(bad)


def _reverse(**options):
    return create_plugin("tasks", "reverse", **options)


BENCHMARK = [Example("0123456789" * 2, ("0123456789" * 2)[::-1], None), Example("12345", "54321", None)]
DIGITS = ("0123456789", "0123456789")


def test_a_model_that_reads_the_benchmark_is_comparable():
    assert incomparable_reason(BENCHMARK, "reverse", "reverse", _reverse(), DIGITS, None) is None
    # Trained on shorter sources but tested on the benchmark's lengths: comparable.
    assert incomparable_reason(BENCHMARK, "reverse", "reverse", _reverse(max_length=40), DIGITS, 64) is None


@pytest.mark.parametrize(
    "task_name, test_task, chars, max_source, says",
    [
        ("date", _reverse(), DIGITS, None, "the benchmark is of task 'reverse', the model of task 'date'"),
        ("reverse", _reverse(max_length=8), DIGITS, None, "up to 20 characters; this config's task options produce at most 8"),
        ("reverse", _reverse(), ("01234", "0123456789"), None, "sources use character(s) '56789' outside this model's vocabulary"),
        ("reverse", _reverse(), ("0123456789", "012"), None, "targets use character(s) '3456789'"),
        ("reverse", _reverse(), DIGITS, 16, "this model's encoder accepts at most 16"),
    ],
)
def test_what_makes_a_model_incomparable(task_name, test_task, chars, max_source, says):
    reason = incomparable_reason(BENCHMARK, "reverse", task_name, test_task, chars, max_source)
    assert reason is not None and says in reason


def test_overlap_is_the_share_of_benchmark_keys_seen_in_training():
    benchmark = [Example(s, s[::-1], None) for s in ("123", "456", "789", "000")]
    training = [Example("456", "654", None), Example("000", "000", None), Example("999", "999", None)]
    assert overlap(benchmark, training, key=lambda ex: ex.source) == 0.5
    assert overlap([], training, key=lambda ex: ex.source) == 0.0
    assert not math.isnan(overlap(benchmark, [], key=lambda ex: ex.source))


def test_an_unusable_champion_keeps_the_alias_and_the_reason_says_why():
    from attnlab.ops.promotion import keep_unusable_champion

    promoted, reason = keep_unusable_champion("its files are missing")
    assert promoted is False and reason == "champion unusable: its files are missing"
