"""The benchmark document: drawn deterministically from a config's test distribution, written and
read back unchanged; what makes a model comparable with a benchmark, and the overlap with
training."""

from __future__ import annotations

import math

import pytest

from attnlab.evaluation.benchmark import draw_benchmark, from_json, incomparable_reason, overlap, to_json
from attnlab.lab.config import ExperimentConfig
from attnlab.plugins import Example, create_plugin


def test_the_same_seed_draws_the_same_benchmark_and_another_seed_another():
    config = ExperimentConfig(task="reverse", task_options={"max_length": 12}, test_task_options={"min_length": 10})
    first, again, other = (draw_benchmark(config, 50, seed) for seed in (3, 3, 4))
    assert to_json(first) == to_json(again) and to_json(first) != to_json(other)
    assert len({ex.source for ex in first.examples}) == 50  # distinct
    assert all(10 <= len(ex.source) <= 12 for ex in first.examples)  # the test options apply
    assert first.task_options == {"max_length": 12, "min_length": 10} and first.task == "reverse"


def test_the_document_round_trips():
    drawn = draw_benchmark(ExperimentConfig(), 20, 7)
    back = from_json(to_json(drawn))
    assert back == drawn
    assert all(len(ex.alignment) == len(ex.target) for ex in back.examples)


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
