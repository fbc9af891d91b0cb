"""The benchmark set of a registered model: drawn once, written as one JSON document, read back;
whether a model can be measured on it (:func:`incomparable_reason`) and how much of it a model
trained on (:func:`overlap`).

Pure (no MLflow): ``attnlab.flows.tracking.benchmark_store`` keeps the document in MLflow. The document
holds the task, the task options it was drawn with (training options updated with the test
ones), the seed and the examples as ``[source, target, alignment]`` rows.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from attnlab.data.splits import corpus_splits, draw_distinct, split_sizes
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_task
from attnlab.plugins import Example, Task
from attnlab.plugins.tokens import unit_name


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


def incomparable_reason(
    examples: list[Example],
    benchmark_task: str,
    task_name: str,
    test_task: Task,
    vocab_tokens: tuple[Collection[str], Collection[str]],
    max_source_length: int | None,
) -> str | None:
    """Why a model cannot be measured on the benchmark ``examples`` of task ``benchmark_task``,
    or None when it can.

    ``test_task`` is the challenger's test-time task (its options decide which sources it is
    meant for, its tokenizations how texts are cut into tokens), ``vocab_tokens`` the (source,
    target) tokens its vocabularies hold (a string: its characters) and ``max_source_length``
    the most source tokens its encoder accepts (None: no limit). A model is incomparable when
    the benchmark is of another task, has tokens its vocabularies lack, or sources longer than
    its task's test options or its encoder allow.
    """
    if benchmark_task != task_name:
        return f"the benchmark is of task {benchmark_task!r}, the model of task {task_name!r}"
    if not examples:
        return None
    sources = [test_task.source_tokens(ex.source) for ex in examples]
    for side, tokens, known, tokenization in (
        ("source", {t for seq in sources for t in seq}, vocab_tokens[0], test_task.source_tokenization),
        ("target", {t for ex in examples for t in test_task.target_tokens(ex.target)}, vocab_tokens[1], test_task.target_tokenization),
    ):
        missing = sorted(tokens - set(known))
        if missing:
            what = f"character(s) {''.join(missing)!r}" if tokenization == "characters" else f"token(s) {' '.join(missing)!r}"
            return f"the benchmark's {side}s use {what} outside this model's vocabulary"
    longest = max(len(seq) for seq in sources)
    unit = unit_name(test_task.source_tokenization)
    if longest > test_task.max_source_length:
        return (
            f"the benchmark has sources of up to {longest} {unit}; this config's task options "
            f"produce at most {test_task.max_source_length} (set test_task options to match the benchmark)"
        )
    if max_source_length is not None and longest > max_source_length:
        return f"the benchmark has sources of up to {longest} {unit}; this model's encoder accepts at most {max_source_length}"
    return None


def overlap(benchmark: Iterable[Example], training: Iterable[Example], key: Callable[[Example], str]) -> float:
    """Share of benchmark examples whose key also occurs in ``training`` (0 for no benchmark)."""
    benchmark = list(benchmark)
    seen = {key(ex) for ex in training}
    return sum(key(ex) in seen for ex in benchmark) / max(len(benchmark), 1)
