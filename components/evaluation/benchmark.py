"""The benchmark set of a registered model: drawn once, written as one JSON document, read back.

Pure (no MLflow): ``attnlab.flows.tracking.benchmark_store`` keeps the document in MLflow. The document
holds the task, the task options it was drawn with (training options updated with the test
ones), the seed and the examples as ``[source, target, alignment]`` rows.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from attnlab.data.splits import corpus_splits, draw_distinct, split_sizes
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_task
from attnlab.plugins import Example

#: Examples drawn for a registered model's benchmark by its first promotion.
DEFAULT_SIZE = 500


@dataclass(frozen=True)
class BenchmarkSet:
    """A drawn benchmark: its task, the task options it was drawn with, seed and examples."""

    task: str
    task_options: dict[str, Any]
    seed: int
    examples: list[Example]


def draw_benchmark(config: ExperimentConfig, size: int, seed: int) -> BenchmarkSet:
    """``size`` distinct examples of the config's test distribution (its task, with
    ``test_task_options`` when given), deterministic for ``seed``. A task with fixed data gives
    the first ``size`` sources of its test split instead (at most ``test_size``; every target of
    each), which no model of it trains on."""
    task = build_task(config, split="test")
    corpus = task.corpus()
    if corpus is not None:
        test_size = split_sizes(task, (config.train_size, config.validation_size, config.test_size))[2]
        examples = corpus_splits(task, corpus, (0, 0, min(size, test_size))).test
    else:
        examples = draw_distinct(task, size, random.Random(seed))
    return BenchmarkSet(config.task, {**config.task_options, **config.test_task_options}, seed, examples)


def to_json(benchmark: BenchmarkSet) -> str:
    """The benchmark as one JSON document (sorted keys: the same set gives the same bytes)."""
    rows = [[ex.source, ex.target, None if ex.alignment is None else [list(a) for a in ex.alignment]] for ex in benchmark.examples]
    data = {"task": benchmark.task, "task_options": benchmark.task_options, "seed": benchmark.seed, "examples": rows}
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


def from_json(text: str) -> BenchmarkSet:
    """The benchmark written by :func:`to_json`."""
    data = json.loads(text)
    examples = [Example(s, t, None if a is None else tuple(tuple(x) for x in a)) for s, t, a in data["examples"]]
    return BenchmarkSet(data["task"], dict(data.get("task_options") or {}), int(data["seed"]), examples)
