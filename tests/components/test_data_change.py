"""The rule a scheduled retrain applies before training: skip only when the task's data is
exactly what the champion, or the last completed retrain, was trained on."""

from __future__ import annotations

import pytest

from attnlab.ops.data_change import TrainedOn, unchanged_reason

DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
OTHER = DIGEST.replace("9", "8")
CHAMPION = "the champion (version 3)"
LAST = "the last retrain (run 1a2b3c4d, not promoted)"


def test_the_champions_own_data_is_skipped_naming_the_version_and_the_digest():
    assert unchanged_reason(DIGEST, [TrainedOn(DIGEST, CHAMPION)]) == (
        "data unchanged: the champion (version 3) was trained on this data (9f86d081884c)"
    )


def test_data_a_losing_challenger_already_trained_on_is_skipped_too():
    """The challenger of the last tick lost: the champion holds older data, yet training again on
    the same file would only register the same challenger again."""
    reason = unchanged_reason(DIGEST, [TrainedOn(OTHER, CHAMPION), TrainedOn(DIGEST, LAST)])
    assert reason == f"data unchanged: {LAST} was trained on this data (9f86d081884c)"


def test_the_champion_is_named_first_when_both_trained_on_it():
    assert CHAMPION in unchanged_reason(DIGEST, [TrainedOn(DIGEST, CHAMPION), TrainedOn(DIGEST, LAST)])


@pytest.mark.parametrize(
    ("current", "earlier"),
    [
        (DIGEST, [TrainedOn(OTHER, CHAMPION), TrainedOn(OTHER, LAST)]),  # the file changed since both
        (DIGEST, [TrainedOn(None, CHAMPION)]),  # the champion's data was not recorded (trained before, or elsewhere)
        (DIGEST, []),  # nothing trained yet
        (None, [TrainedOn(None, CHAMPION)]),  # a generated task: every retrain draws fresh data
    ],
)
def test_anything_else_trains(current, earlier):
    assert unchanged_reason(current, earlier) is None
