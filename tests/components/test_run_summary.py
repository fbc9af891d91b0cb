"""A train run's summary: its registered model before the promotion, exact match by source
length (what the promotion adds: test_promotion.py)."""

from __future__ import annotations

import pandas as pd

from attnlab.lab.run_summary import by_length, registered_model


def test_a_model_is_named_by_its_registered_name_and_has_a_uri_only_when_registered():
    assert registered_model("attnlab-date", "3") == {
        "name": "attnlab-date", "version": "3", "uri": "models:/attnlab-date/3", "champion": False,
        "champion_version": None, "previous_champion": None, "decision": None,
    }  # fmt: skip
    assert registered_model("attnlab-date", None)["uri"] is None
    assert registered_model("attnlab-pairs-lexicon", "1")["uri"] == "models:/attnlab-pairs-lexicon/1"


def test_exact_match_by_source_length():
    predictions = pd.DataFrame({"source_length": [3, 5, 3, 3], "correct": [True, False, False, True]})
    assert by_length(predictions) == [{"length": 3, "count": 3, "exact_match": 2 / 3}, {"length": 5, "count": 1, "exact_match": 0.0}]
