"""The rule a scheduled retrain applies before training: skip only when the task's data is
exactly what the champion was trained on."""

from __future__ import annotations

import pytest

from attnlab.ops.data_change import unchanged_reason

DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def test_the_champions_own_data_is_skipped_naming_the_version_and_the_digest():
    assert unchanged_reason(DIGEST, DIGEST, "3") == "data unchanged: the champion (version 3) was trained on this data (9f86d081884c)"


@pytest.mark.parametrize(
    ("current", "recorded", "version"),
    [
        (DIGEST, DIGEST.replace("9", "8"), "3"),  # the file changed
        (DIGEST, None, "3"),  # the champion's data was not recorded (trained before, or elsewhere)
        (DIGEST, DIGEST, None),  # no champion yet
        (None, None, "3"),  # a generated task: every retrain draws fresh data
    ],
)
def test_anything_else_trains(current, recorded, version):
    assert unchanged_reason(current, recorded, version) is None
