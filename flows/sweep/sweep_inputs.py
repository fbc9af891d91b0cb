"""What every run of a sweep is shown, drawn once from the data of each task's first config: the
probe each run plots first, the longest training source, and the examples of the parent's explorer
page."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from attnlab.data.datasets import load_splits
from attnlab.data.examples import gold_alignments, pick_probe
from attnlab.evaluation.example_records import Gold
from attnlab.flows.run.steps import dataset
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_task
from attnlab.plugins import Example, Task
from attnlab.viz.explorer_data import sweep_examples


@dataclass(frozen=True)
class SharedInputs:
    """What every run of a task is shown, drawn from the data of its first config's seed
    (``data_seeds``): the probe ``([source, target], its gold alignment)`` each run plots first,
    the longest training source (``train_max``), the test examples of the parent's explorer page
    (``shared``), their sources (``compares``) and every target of each of them (``references``:
    source -> targets, for a corpus task's sources with several); each by task."""

    probes: dict[str, tuple[list[str], Gold | None]]
    train_max: dict[str, int]
    shared: dict[str, list[Example]]
    compares: dict[str, list[str]]
    data_seeds: dict[str, int]
    references: dict[str, dict[str, list[str]]]


def shared_inputs(configs: list[ExperimentConfig], benchmarks: Mapping[str, tuple[str, list[str]] | None] | None = None) -> SharedInputs:
    """The :class:`SharedInputs` of a sweep's ``configs``. ``benchmarks``: registered model name
    -> the digest and keys of its benchmark (a registering sweep's runs leave those out of their
    data, and so does the data the shared inputs come from)."""
    first = {c.task: c for c in configs}
    benchmarks = benchmarks or {}
    data = {
        config.task: (config.seed, load_splits(dataset(config, benchmarks.get(config.registered_model())))) for config in first.values()
    }
    tasks = {name: build_task(config) for name, config in first.items()}
    picked = {name: pick_probe(splits, _source_length(tasks[name])) for name, (_, splits) in data.items()}
    probes = {name: (probe, gold_alignments(data[name][1].test, [probe[0]], [probe[1]])[0]) for name, (probe, _) in picked.items()}
    shared = {name: sweep_examples(splits.test, probes[name][0]) for name, (_, splits) in data.items()}
    return SharedInputs(
        probes,
        {name: longest for name, (_, longest) in picked.items()},
        shared,
        {name: [example.source for example in examples] for name, examples in shared.items()},
        {name: seed for name, (seed, _) in data.items()},
        {name: _references(splits.test, shared[name]) for name, (_, splits) in data.items()},
    )


def _source_length(task: Task) -> Callable[[str], int]:
    """How many tokens of ``task`` a source has."""
    return lambda text: len(task.source_tokens(text))


def _references(test: list[Example], shown: list[Example]) -> dict[str, list[str]]:
    """Every target ``test`` gives for each source of ``shown``."""
    sources = {example.source for example in shown}
    found: dict[str, list[str]] = {}
    for example in test:
        if example.source in sources:
            found.setdefault(example.source, []).append(example.target)
    return found
