"""A train run's summary: its registered model before and after the promotion, exact match by
source length."""

from __future__ import annotations

import pandas as pd

from attnlab.lab.run_summary import by_length, promotion_summary, registered_model
from attnlab.ops.promotion import Decision

BENCHMARK = {"run_id": "bench", "size": 500, "overlap": 0.0}


def test_a_model_is_named_by_its_registered_name_and_has_a_uri_only_when_registered():
    assert registered_model("attnlab-date", "3") == {
        "name": "attnlab-date", "version": "3", "uri": "models:/attnlab-date/3", "champion": False,
        "champion_version": None, "previous_champion": None, "decision": None,
    }  # fmt: skip
    assert registered_model("attnlab-date", None)["uri"] is None
    assert registered_model("attnlab-pairs-lexicon", "1")["uri"] == "models:/attnlab-pairs-lexicon/1"


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


def test_exact_match_by_source_length():
    predictions = pd.DataFrame({"source_length": [3, 5, 3, 3], "correct": [True, False, False, True]})
    assert by_length(predictions) == [{"length": 3, "count": 3, "exact_match": 2 / 3}, {"length": 5, "count": 1, "exact_match": 0.0}]
