"""The one promotion rule and what a promotion adds to a run's summary (pure, no MLflow)."""

from __future__ import annotations

import pytest

from attnlab.ops.promotion import Decision, check_margin, decide, promotion_summary

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


BENCHMARK = {"run_id": "bench", "size": 500, "overlap": 0.0}


def test_a_promoted_version_holds_the_alias_and_names_the_one_it_beat():
    won = Decision(True, "beats", "3", 0.9, "2", 0.8, 0.0)
    fields = promotion_summary(won, "3", BENCHMARK)
    assert fields["champion"] and fields["champion_version"] == "3"
    assert fields["previous_champion"] == {"version": "2", "benchmark_score": 0.8}
    assert fields["decision"]["reason"] == "beats" and fields["benchmark"] == BENCHMARK


def test_a_version_that_lost_leaves_the_alias_with_the_champion():
    lost = Decision(False, "does not beat", "3", 0.7, "2", 0.8, 0.0)
    fields = promotion_summary(lost, "3", BENCHMARK)
    assert not fields["champion"] and fields["champion_version"] == "2"
    first = Decision(True, "first", "1", 0.9, None, None, 0.0)
    assert promotion_summary(first, "1", BENCHMARK)["previous_champion"] is None
