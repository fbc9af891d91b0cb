"""The benchmark document: drawn deterministically from a config's test distribution, written and
read back unchanged."""

from __future__ import annotations

from attnlab.evaluation.benchmark import draw_benchmark, from_json, to_json
from attnlab.lab.config import ExperimentConfig


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
